package plan

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu/gputest"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/rehearsal"
	"github.com/roofline/roofline/internal/state"
)

// planSource plans one configuration source against reference engines.
func planSource(t *testing.T, src []byte, prior *state.File, obs map[string]*Observation) *Plan {
	t.Helper()
	return planSourceIn(t, models, src, prior, obs)
}

// planSourceIn is planSource with the configuration rooted at dir (an
// example's modules resolve against it).
func planSourceIn(t *testing.T, dir string, src []byte, prior *state.File, obs map[string]*Observation) *Plan {
	t.Helper()
	cfg, diags := config.Load(dir, []string{"main.hcl"}, map[string][]byte{"main.hcl": src})
	if diags.HasErrors() {
		t.Fatalf("config: %v\n%s", diags, src)
	}
	rehearsal.ResolveAll(cfg, "/usr/bin/roofline") // as the CLI does
	in := &Inputs{Config: cfg, Drivers: testDrivers, Prior: prior, Snapshot: gputest.H100s(8), Engines: map[string]EngineResult{}, Models: map[string]ModelResult{},
		Observed: obs, Ports: fakePorts{}, Now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	for name, e := range cfg.Engines {
		if inst, ok := engine.Reference(e.Kind, e.Version); ok {
			in.Engines[name] = EngineResult{Installed: inst}
		}
	}
	for name, m := range cfg.Models {
		info, err := model.Inspect(m.Path)
		in.Models[name] = ModelResult{Info: info, Err: err, Fingerprint: "fp-" + filepath.Base(m.Path)}
	}
	return Make(in)
}

// rewriteCosmetic returns src with every block's attributes in reverse
// order, a comment on top, and a comment and a blank line opening every
// block: what a reviewer's edit may do without changing any meaning.
func rewriteCosmetic(t *testing.T, src []byte) []byte {
	t.Helper()
	f, diags := hclwrite.ParseConfig(src, "main.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var reorder func(b *hclwrite.Body)
	reorder = func(b *hclwrite.Body) {
		attrs := b.Attributes()
		names := make([]string, 0, len(attrs))
		toks := map[string]hclwrite.Tokens{}
		for n, a := range attrs {
			names = append(names, n)
			toks[n] = a.Expr().BuildTokens(nil)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(names)))
		for _, n := range names {
			b.RemoveAttribute(n)
		}
		for _, n := range names {
			b.SetAttributeRaw(n, toks[n])
		}
		for _, blk := range b.Blocks() {
			reorder(blk.Body())
		}
	}
	reorder(f.Body())
	var out strings.Builder
	out.WriteString("# A comment at the top of the file.\n\n\n")
	for _, line := range strings.Split(string(hclwrite.Format(f.Bytes())), "\n") {
		out.WriteString(line + "\n")
		if trimmed := strings.TrimSpace(line); strings.HasSuffix(trimmed, "{") && !strings.Contains(trimmed, "=") {
			out.WriteString("  // a comment opening the block\n\n")
		}
	}
	return []byte(out.String())
}

// semanticFixtures are every valid configuration the tests and examples
// hold, by name.
func semanticFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{
		"plan/qwen":   []byte(baseHCL + qwenServer),
		"plan/gates":  []byte(baseHCL + gatedServer),
		"plan/sglang": []byte(baseHCL + strings.ReplaceAll(strings.ReplaceAll(qwenServer, "vllm_016", "sglang"), `"hermes"`, `"qwen25"`)),
	}
	for _, pattern := range []string{"../config/testdata/valid/*.hcl", "../../examples/*/main.hcl"} {
		paths, _ := filepath.Glob(pattern)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[strings.TrimPrefix(strings.TrimPrefix(p, "../../"), "../")] = b
		}
	}
	return out
}

const gatedServer = `
server "gated" {
  engine           = engine.vllm_016
  model            = model.qwen
  gpus             = [1]
  port             = 8001
  max_model_len    = 16384
  tool_call_parser = "hermes"
  env              = { VLLM_LOGGING_LEVEL = "DEBUG", HF_TOKEN = "hf_secret" }
  gate {
    health_timeout = "5m"
    smoke_toolcall = true
    bench {
      concurrency                  = 8
      requests                     = 40
      min_output_tokens_per_second = 500
      max_ttft_p99                 = "2s"
    }
  }
  lifecycle {
    create_before_destroy = true
  }
}
`

// TestCommentsAndOrderChangeNothing rewrites every valid fixture with
// comments, blank lines and reordered attributes and expects the same
// plan: against the state the original would have written, no changes.
func TestCommentsAndOrderChangeNothing(t *testing.T) {
	for name, src := range semanticFixtures(t) {
		t.Run(name, func(t *testing.T) {
			dir := models
			if strings.HasPrefix(name, "examples/") {
				dir, _ = filepath.Abs(filepath.Join("../..", filepath.Dir(name)))
			}
			first := planSourceIn(t, dir, src, nil, nil)
			st, obs := stateFrom(first)
			if len(st.Servers) == 0 {
				t.Fatalf("no server rendered; diagnostics: %v", summaries(first))
			}
			rewritten := rewriteCosmetic(t, src)
			if string(rewritten) == string(src) {
				t.Fatal("the rewrite changed nothing")
			}
			again := planSourceIn(t, dir, rewritten, st, obs)
			for _, c := range again.Changes {
				if c.Action != NoOp {
					t.Errorf("%s: %s (%s) after a cosmetic rewrite\n%s", c.Addr, c.Action.Symbol(), c.Reason, rewritten)
				}
			}
			for _, c := range first.Changes {
				a := again.Change(c.Name)
				if a == nil || a.After == nil || c.After == nil {
					continue
				}
				if a.After.ConfigHash != c.After.ConfigHash || a.After.GateHash != c.After.GateHash || !slices.Equal(a.After.Argv, c.After.Argv) {
					t.Errorf("%s: hashes or argv moved", c.Addr)
				}
			}
		})
	}
}

// TestGateChangeIsStillSeen: the hash ignores where values are written,
// not what they are.
func TestGateChangeIsStillSeen(t *testing.T) {
	src := []byte(baseHCL + gatedServer)
	st, obs := stateFrom(planSource(t, src, nil, nil))
	p := planSource(t, []byte(strings.Replace(string(src), "min_output_tokens_per_second = 500", "min_output_tokens_per_second = 600", 1)), st, obs)
	if c := wantAction(t, p, "gated", Update); c.Reason != "gate settings changed; no restart" {
		t.Errorf("reason %q", c.Reason)
	}
}

// TestEnvChangesPerKey names each changed variable and masks secrets.
func TestEnvChangesPerKey(t *testing.T) {
	src := baseHCL + gatedServer
	st, obs := stateFrom(planSource(t, []byte(src), nil, nil))
	for _, s := range st.Servers {
		s.Env = state.RedactEnv(s.Env, nil) // as apply records it
	}
	changed := strings.Replace(src, `{ VLLM_LOGGING_LEVEL = "DEBUG", HF_TOKEN = "hf_secret" }`,
		`{ HF_TOKEN = "hf_rotated", VLLM_ATTENTION_BACKEND = "FLASHINFER" }`, 1)
	p := planSource(t, []byte(changed), st, obs)
	c := p.Change("gated")
	if c == nil || !c.Action.IsReplace() {
		t.Fatalf("want a replacement: %+v", c)
	}
	want := []EnvChange{
		{Key: "HF_TOKEN", Action: "update", Sensitive: true},
		{Key: "VLLM_ATTENTION_BACKEND", Action: "create", After: "FLASHINFER"},
		{Key: "VLLM_LOGGING_LEVEL", Action: "delete", Before: "DEBUG"},
	}
	if !slices.Equal(c.EnvChanges, want) {
		t.Fatalf("env changes %+v, want %+v", c.EnvChanges, want)
	}
	var human strings.Builder
	RenderHuman(&human, p.ToJSON(), func(s string) string { return s })
	out := human.String()
	for _, s := range []string{"HF_TOKEN = (sensitive value changed)", `VLLM_ATTENTION_BACKEND = "FLASHINFER"`, `VLLM_LOGGING_LEVEL = "DEBUG"`} {
		if !strings.Contains(out, s) {
			t.Errorf("plan lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "hf_rotated") || strings.Contains(out, "hf_secret") {
		t.Errorf("a secret reached the plan:\n%s", out)
	}
}

// TestModelManifestIgnoresMtime: touching a file changes nothing; a change
// of content or size names the file.
func TestModelManifestIgnoresMtime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	if err := modeltest.Write(dir, modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	before, err := ModelManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(cfgPath, later, later); err != nil {
		t.Fatal(err)
	}
	touched, _ := ModelManifest(dir)
	if ManifestFingerprint(touched) != ManifestFingerprint(before) {
		t.Fatal("an mtime-only change moved the fingerprint")
	}
	legacyBefore, _ := LegacyModelFingerprint(dir)
	b, _ := os.ReadFile(cfgPath)
	edited := strings.Replace(string(b), `"num_hidden_layers": 36`, `"num_hidden_layers": 35`, 1)
	if edited == string(b) {
		t.Fatalf("config.json has no num_hidden_layers 36:\n%s", b)
	}
	if err := os.WriteFile(cfgPath, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	after, _ := ModelManifest(dir)
	if ManifestFingerprint(after) == ManifestFingerprint(before) {
		t.Fatal("a content change kept the fingerprint")
	}
	if got := ModelFileChanges(before, after); !slices.Equal(got, []string{"~ config.json", "+ extra.txt"}) {
		t.Errorf("changes %q", got)
	}
	if legacyAfter, _ := LegacyModelFingerprint(dir); legacyAfter == legacyBefore {
		t.Error("the legacy fingerprint should have moved")
	}
}

// TestModelFilesNamedInPlan: a replacement caused by model files names
// them; a state written before manifests existed restarts nothing.
func TestModelFilesNamedInPlan(t *testing.T) {
	src := []byte(baseHCL + qwenServer)
	first := planSource(t, src, nil, nil)
	st, obs := stateFrom(first)
	st.Servers["qwen"].Model.Files = map[string]string{"config.json": "10:aa", "model.safetensors": "99:bb"}
	in := func(files map[string]string, legacy string) *Plan {
		cfg, _ := config.Load(models, []string{"main.hcl"}, map[string][]byte{"main.hcl": src})
		rehearsal.ResolveAll(cfg, "/usr/bin/roofline") // as the CLI does
		i := &Inputs{Config: cfg, Drivers: testDrivers, Prior: st, Observed: obs, Snapshot: gputest.H100s(8), Engines: map[string]EngineResult{}, Models: map[string]ModelResult{}, Ports: fakePorts{}}
		for name, e := range cfg.Engines {
			inst, _ := engine.Reference(e.Kind, e.Version)
			i.Engines[name] = EngineResult{Installed: inst}
		}
		for name, m := range cfg.Models {
			info, err := model.Inspect(m.Path)
			i.Models[name] = ModelResult{Info: info, Err: err, Files: files, Fingerprint: ManifestFingerprint(files), LegacyFingerprint: legacy}
		}
		return Make(i)
	}
	p := in(map[string]string{"config.json": "10:cc", "model.safetensors": "99:bb"}, "")
	c := wantAction(t, p, "qwen", DeleteThenCreate)
	if !slices.Equal(c.ModelFiles, []string{"~ config.json"}) || !strings.Contains(c.Reason, "model files: ~ config.json") {
		t.Errorf("model files %q, reason %q", c.ModelFiles, c.Reason)
	}
	// The state of an older roofline: fingerprint of names, sizes, mtimes.
	st.Servers["qwen"].Model.Files = nil
	st.Servers["qwen"].Model.Fingerprint = "legacy-fp"
	st.Servers["qwen"].ConfigHash = ""
	legacyFirst := in(map[string]string{"config.json": "10:cc"}, "legacy-fp")
	st.Servers["qwen"].ConfigHash = legacyFirst.Change("qwen").After.ConfigHash
	if p := in(map[string]string{"config.json": "10:cc"}, "legacy-fp"); p.HasChanges() {
		t.Errorf("an unchanged folder recorded by an older roofline is replaced: %s", p.Change("qwen").Reason)
	}
	if p := in(map[string]string{"config.json": "10:cc"}, "other"); !p.HasChanges() {
		t.Error("a changed folder recorded by an older roofline is not replaced")
	}
}
