package docker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/engine"
)

func TestImageRunner(t *testing.T) {
	f, d := newTestDriver(t)
	r := ImageRunner{Driver: func() (*Driver, error) { return d, nil }}
	ctx := context.Background()
	missing := "vllm/vllm-openai@sha256:3333333333333333333333333333333333333333333333333333333333333333"

	if id, err := r.ImageID(ctx, testRef); err != nil || id != testID {
		t.Errorf("ImageID of a loaded image: %q, %v", id, err)
	}
	_, err := r.ImageID(ctx, missing)
	var me *ImageMissingError
	if !errors.Is(err, engine.ErrImageNotFound) || !errors.As(err, &me) || !strings.Contains(err.Error(), "roofline never pulls") {
		t.Errorf("ImageID of a missing image: %v; want engine.ErrImageNotFound with the driver's message", err)
	}

	f.mu.Lock()
	f.startHook = func(c *fakeContainer) {
		c.logs = append(c.logs, fakeLine{f.now(), Stdout, "0.16.0\n"})
	}
	f.mu.Unlock()
	if out, err := r.RunImage(ctx, testRef, []string{"vllm", "--version"}, nil); err != nil || string(out) != "0.16.0\n" {
		t.Errorf("a run that exits 0: %q, %v", out, err)
	}
	f.mu.Lock()
	f.startHook = func(c *fakeContainer) {
		c.logs = append(c.logs, fakeLine{f.now(), Stderr, "unrecognized arguments\n"})
		c.c.State.ExitCode = 2
	}
	f.mu.Unlock()
	_, err = r.RunImage(ctx, testRef, []string{"vllm", "serve", "--help=all"}, nil)
	var re *engine.RunError
	if !errors.As(err, &re) || re.ExitCode != 2 || !strings.Contains(string(re.Stderr), "unrecognized") {
		t.Errorf("a run that exits 2: %v", err)
	}
	_, err = r.RunImage(ctx, missing, []string{"vllm"}, nil)
	if !errors.As(err, &re) || re.ExitCode != -1 || re.Err == nil {
		t.Errorf("a run that cannot start: %v", err)
	}

	down := ImageRunner{Driver: func() (*Driver, error) { return nil, errors.New("no daemon") }}
	if _, err := down.ImageID(ctx, testRef); err == nil || err.Error() != "no daemon" {
		t.Errorf("ImageID without Docker: %v", err)
	}
	if _, err := down.RunImage(ctx, testRef, nil, nil); err == nil || err.Error() != "no daemon" {
		t.Errorf("RunImage without Docker: %v", err)
	}
}
