package rehearsal

import (
	"fmt"
	"maps"
	"strings"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/gpu"
	"github.com/zclconf/go-cty/cty"
)

// Resolve makes an engine block with rehearsal = true a plain engine
// command: roofline itself (self), playing the engine's kind at its version
// — [self rehearsal vllm@V], which then takes `serve MODEL ...` and
// `--version`; [self rehearsal sglang@V -m sglang.launch_server], whose
// interpreter part answers `-c "import sglang; ..."`. Its identity is the
// kind and version, since the binary changes with every build. The CLI
// resolves every engine before plan or a probe sees it, so that they see
// only a command. Resolving twice changes nothing.
func Resolve(e *config.Engine, self string) {
	if !e.Rehearsal || len(e.Command) > 0 {
		return
	}
	e.Command = append([]string{self, "rehearsal", e.Kind + "@" + e.Version}, engine.LookupOrDefault(e.Kind).ModuleArgs()...)
	e.PinnedIdentity = "rehearsal:" + e.Kind + "@" + e.Version
}

// ResolveAll resolves every engine of cfg.
func ResolveAll(cfg *config.Config, self string) {
	if cfg == nil {
		return
	}
	for _, e := range cfg.Engines {
		Resolve(e, self)
	}
}

// UseInventory hands the GPU snapshot file a plan was made against (snap
// read from "file:PATH") to cfg's rehearsal engines, through their
// environment: a rehearsal engine sizes itself from those GPUs. NVML's
// snapshot, or none, changes nothing.
func UseInventory(cfg *config.Config, snap *gpu.Snapshot) {
	if snap == nil || cfg == nil {
		return
	}
	src, ok := strings.CutPrefix(snap.Source, "file:")
	if !ok {
		return
	}
	for _, e := range cfg.Engines {
		if e.Rehearsal {
			e.Env = maps.Clone(e.Env)
			if e.Env == nil {
				e.Env = map[string]string{}
			}
			e.Env[EnvInventory] = src
		}
	}
}

// Recognize tells a running rehearsal engine from its command line
// ("roofline rehearsal vllm@0.16.0 serve ..."), for roofline import: its
// engine block is rehearsal = true at that kind and version.
func Recognize(argv []string) (engine.Recognized, bool, error) {
	if len(argv) < 3 || argv[1] != "rehearsal" {
		return engine.Recognized{}, false, nil
	}
	k, v, ok := strings.Cut(argv[2], "@")
	if !ok || engine.Lookup(k) == nil {
		return engine.Recognized{}, false, fmt.Errorf("%q is not a rehearsal engine spec (kind@version)", argv[2])
	}
	return engine.Recognized{Kind: k, Version: v, Rest: argv[3:],
		Attrs: map[string]cty.Value{"rehearsal": cty.True},
		Is:    func(e *config.Engine) bool { return e.Rehearsal && e.Version == v },
	}, true, nil
}
