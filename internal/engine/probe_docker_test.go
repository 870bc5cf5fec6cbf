package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
)

// fakeImages is a host's image store for probes: images by reference (and
// id), and a fakeRunner answering the commands run inside them.
type fakeImages struct {
	*fakeRunner
	ids  map[string]string // ref → image id
	refs []string          // the image of each run
}

func (f *fakeImages) ImageID(_ context.Context, ref string) (string, error) {
	if id, ok := f.ids[ref]; ok {
		return id, nil
	}
	return "", fmt.Errorf("image %s is not on this host; docker load -i FILE: %w", ref, ErrImageNotFound)
}

func (f *fakeImages) RunImage(ctx context.Context, ref string, argv, env []string) ([]byte, error) {
	f.mu.Lock()
	f.refs = append(f.refs, ref)
	f.mu.Unlock()
	return f.Run(ctx, argv, env)
}

const (
	vllmRef = "vllm/vllm-openai@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	vllmID  = "sha256:aaaa"
)

func vllmImages(t *testing.T, version string) *fakeImages {
	return &fakeImages{ids: map[string]string{vllmRef: vllmID}, fakeRunner: &fakeRunner{answers: map[string]fakeAnswer{
		"--version":        {out: version + "\n"},
		"serve --help=all": {out: mustHelp(t, "vllm", version, false)},
	}}}
}

func TestProbeImage(t *testing.T) {
	e := &config.Engine{Name: "v", Kind: "vllm", Version: "0.16.0", Image: vllmRef, Env: map[string]string{"VLLM_ATTENTION_BACKEND": "FLASHINFER"}}
	f := vllmImages(t, "0.16.0")
	cache := t.TempDir()
	inst, err := Probe(context.Background(), e, f, cache, false)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Version != "0.16.0" || inst.Flags.Lookup("--max-model-len") == nil || inst.HelpCommand != "vllm serve --help=all" {
		t.Errorf("probe = version %q, help %q, --max-model-len known: %v", inst.Version, inst.HelpCommand, inst.Flags.Lookup("--max-model-len") != nil)
	}
	want := Identity{Image: vllmRef, Digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111", ImageID: vllmID, Version: "0.16.0"}
	if !reflect.DeepEqual(inst.Identity, want) {
		t.Errorf("identity %+v, want %+v", inst.Identity, want)
	}
	if !slices.Equal(f.calls, []string{"--version", "serve --help=all"}) {
		t.Errorf("runs %q", f.calls)
	}
	for _, ref := range f.refs {
		if ref != vllmRef {
			t.Errorf("ran image %s, want the pinned %s", ref, vllmRef)
		}
	}
	// The commands run inside the image with the air-gap variables and the
	// engine's env, never roofline's own environment.
	env := strings.Join(f.envs[0], " ")
	for _, w := range []string{"HF_HUB_OFFLINE=1", "VLLM_NO_USAGE_STATS=1", "VLLM_ATTENTION_BACKEND=FLASHINFER"} {
		if !strings.Contains(env, w) {
			t.Errorf("probe env %q lacks %s", env, w)
		}
	}
	if strings.Contains(env, "PATH=") {
		t.Errorf("probe env carries roofline's PATH: %q", env)
	}

	// Cached by image: a second probe runs nothing.
	if _, err := Probe(context.Background(), e, f, cache, false); err != nil {
		t.Fatal(err)
	}
	if f.callCount() != 2 {
		t.Errorf("a cached image was probed again: %q", f.calls)
	}
	// Another image id under the same reference (a re-loaded image): probed again.
	f.ids[vllmRef] = "sha256:bbbb"
	if _, err := Probe(context.Background(), e, f, cache, false); err != nil {
		t.Fatal(err)
	}
	if f.callCount() != 4 {
		t.Errorf("a changed image id did not re-probe: %q", f.calls)
	}
}

func TestProbeImageSGLang(t *testing.T) {
	ref := "lmsysorg/sglang@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	f := &fakeImages{ids: map[string]string{ref: "sha256:cccc"}, fakeRunner: &fakeRunner{answers: map[string]fakeAnswer{
		`-c import sglang; print(sglang.__version__)`: {out: "0.5.6.post2\n"},
		"-m sglang.launch_server --help":              {out: mustHelp(t, "sglang", "0.5.6.post2", false)},
	}}}
	e := &config.Engine{Name: "s", Kind: "sglang", Version: "0.5.6.post2", Image: ref}
	inst, err := Probe(context.Background(), e, f, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Version != "0.5.6.post2" || inst.Flags.Lookup("--tp-size") == nil {
		t.Errorf("probe = %q, --tp-size known: %v", inst.Version, inst.Flags.Lookup("--tp-size") != nil)
	}
}

func TestProbeImageErrors(t *testing.T) {
	tests := []struct {
		name string
		f    *fakeImages
		want []string
		is   error
	}{
		{"missing image", &fakeImages{fakeRunner: &fakeRunner{}}, []string{`engine "v": image ` + vllmRef, "docker load -i"}, ErrImageNotFound},
		{"--version fails in the image", &fakeImages{ids: map[string]string{vllmRef: vllmID}, fakeRunner: &fakeRunner{answers: map[string]fakeAnswer{
			"--version": {exit: 127, stderr: `exec: "vllm": executable file not found in $PATH`}}}},
			[]string{"reading the version failed", "exited with status 127", "executable file not found"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &config.Engine{Name: "v", Kind: "vllm", Version: "0.16.0", Image: vllmRef}
			_, err := Probe(context.Background(), e, tt.f, "", false)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

// TestProbeImageDefaultRunner: the CLI passes an ExecRunner, which runs no
// images; the probe then uses DefaultImageRunner.
func TestProbeImageDefaultRunner(t *testing.T) {
	f := vllmImages(t, "0.8.5")
	f.answers["serve --help=all"] = fakeAnswer{exit: 2, stderr: "vllm serve: error: unrecognized arguments: --help=all"}
	f.answers["serve --help"] = fakeAnswer{out: mustHelp(t, "vllm", "0.8.5", false)}
	old := DefaultImageRunner
	DefaultImageRunner = f
	t.Cleanup(func() { DefaultImageRunner = old })
	e := &config.Engine{Name: "v", Kind: "vllm", Version: "0.16.0", Image: vllmRef}
	inst, err := Probe(context.Background(), e, ExecRunner{}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Version != "0.8.5" || inst.HelpCommand != "vllm serve --help" {
		t.Errorf("probe = %q from %q", inst.Version, inst.HelpCommand)
	}
	diags := CheckVersion(e, inst)
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, "image "+vllmRef+" reports 0.8.5") {
		t.Errorf("version mismatch: %s", diagText(diags))
	}
}

// TestRenderImage: a docker engine renders the command inside the image and
// leaves GPU selection to the container.
func TestRenderImage(t *testing.T) {
	s := testServer("vllm")
	e := &config.Engine{Name: "img", Kind: "vllm", Version: "0.16.0", Image: vllmRef}
	l, diags := Render(s, testModel(), e, nil)
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	if got := strings.Join(l.Argv[:3], " "); got != "vllm serve /models/Qwen3-8B" {
		t.Errorf("argv starts %q", got)
	}
	if _, ok := l.Env["CUDA_VISIBLE_DEVICES"]; ok {
		t.Errorf("env %v sets CUDA_VISIBLE_DEVICES for a container", l.Env)
	}
	if l.Env["HF_HUB_OFFLINE"] != "1" {
		t.Errorf("env %v lacks the air-gap variables", l.Env)
	}
	s.Env = map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"}
	if _, diags := Render(s, testModel(), e, nil); !diags.HasErrors() {
		t.Error("CUDA_VISIBLE_DEVICES in a container engine's env is accepted")
	}

	se := &config.Engine{Name: "sg", Kind: "sglang", Version: "0.5.6.post2", Image: "lmsysorg/sglang@sha256:00"}
	l, _ = Render(testServer("sglang"), testModel(), se, nil)
	if got := strings.Join(l.Argv[:5], " "); got != "python3 -m sglang.launch_server --model-path /models/Qwen3-8B" {
		t.Errorf("SGLang argv starts %q", got)
	}
}
