package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/config"
)

// ImageRunner is what probing a docker engine needs from the Docker daemon.
// The engine layer knows no Docker client: the CLI supplies one (through
// the Runner given to Probe, or DefaultImageRunner).
type ImageRunner interface {
	// ImageID returns the id (sha256:...) of the local image that ref
	// ("repo@sha256:X") pins, without pulling; an error wrapping
	// ErrImageNotFound when this host does not have it.
	ImageID(ctx context.Context, ref string) (string, error)
	// RunImage runs argv in a throwaway container of ref, argv[0]
	// replacing the image's entrypoint, with env and no network, and
	// returns its standard output; a non-zero exit is a *RunError.
	RunImage(ctx context.Context, ref string, argv, env []string) ([]byte, error)
}

// ErrImageNotFound is an engine image missing from the host.
var ErrImageNotFound = errors.New("image not found on this host")

// DefaultImageRunner probes docker engines when the Runner passed to Probe
// does not run images. The CLI sets it to the Docker driver's.
var DefaultImageRunner ImageRunner

// imageDigest is the digest an image reference pins ("sha256:..."), "" for
// a reference without one.
func imageDigest(ref string) string {
	_, d, ok := strings.Cut(ref, "@")
	if !ok {
		return ""
	}
	return d
}

// imageExec runs probe commands in an image.
type imageExec struct {
	ir      ImageRunner
	ref     string
	timeout time.Duration
}

func (x imageExec) Run(ctx context.Context, argv []string, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	out, err := x.ir.RunImage(ctx, x.ref, argv, env)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return out, &RunError{Argv: argv, ExitCode: -1, Err: fmt.Errorf("no answer after %s in image %s (stopped)", x.timeout, x.ref)}
	}
	return out, err
}

// probeImage probes an engine that runs from a docker image: the image must
// be on this host (plan proves apply downloads nothing), and its version and
// flag list come from running the image itself, cached by image digest.
func probeImage(ctx context.Context, e *config.Engine, r Runner, cacheDir string, refresh bool) (*Installed, error) {
	ir, _ := r.(ImageRunner)
	if ir == nil {
		ir = DefaultImageRunner
	}
	if ir == nil {
		return nil, fmt.Errorf("engine %q: this roofline cannot run docker images (no Docker client); use a local install (command = [...])", e.Name)
	}
	id, err := ir.ImageID(ctx, e.Image)
	if err != nil {
		return nil, fmt.Errorf("engine %q: %w", e.Name, err)
	}
	argv := imageCommand(e)
	env := ProbeEnv(e)
	key := probeKey{Format: probeFormat, Kind: e.Kind, Command: argv, Env: env, Image: e.Image, ImageID: id}
	path := ""
	if cacheDir != "" {
		path = filepath.Join(cacheDir, key.file())
		if !refresh {
			if inst := readProbe(path, key); inst != nil {
				return inst, nil
			}
		}
	}
	inst, err := runProbe(ctx, e, argv, imageExec{ir: ir, ref: e.Image, timeout: DefaultProbeTimeout}, env)
	if err != nil {
		return nil, err
	}
	inst.Identity = Identity{Image: e.Image, Digest: imageDigest(e.Image), ImageID: id, Version: inst.Version}
	inst.ProbedAt = time.Now().UTC()
	if path != "" {
		_ = writeProbe(path, probeRecord{Key: key, Installed: inst})
	}
	return inst, nil
}

// imageCommand is the engine's command inside its image (Kind.imageCommand).
func imageCommand(e *config.Engine) []string {
	return slices.Clone(LookupOrDefault(e.Kind).imageCommand)
}
