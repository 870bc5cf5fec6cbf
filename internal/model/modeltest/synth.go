package modeltest

import (
	"fmt"
	"strings"

	"github.com/roofline/roofline/internal/suggest"
)

// ArchNamed returns the architecture `roofline model synth -arch` names;
// a missing or unknown one is an error that lists them all.
func ArchNamed(name string) (Arch, error) {
	if a, found := Arches()[name]; found {
		return a, nil
	}
	names := ArchNames()
	msg := "-arch is required"
	if name != "" {
		msg = fmt.Sprintf("unknown architecture %q.%s", name, suggest.DidYouMean(name, names))
	}
	return Arch{}, fmt.Errorf("%s Architectures: %s", msg, strings.Join(names, ", "))
}

// SynthOptions turns `roofline model synth`'s -shards, -layers and -dtype
// into Write's options; zero and "" keep the architecture's own.
func SynthOptions(shards, layers int, dtype string) ([]Option, error) {
	if shards < 0 || layers < 0 {
		return nil, fmt.Errorf("-shards and -layers must be positive")
	}
	if dtype != "" && dtype != "bf16" && dtype != "fp8" {
		return nil, fmt.Errorf("-dtype %q: want bf16 or fp8", dtype)
	}
	var opts []Option
	if shards > 0 {
		opts = append(opts, Shards(shards))
	}
	if layers > 0 {
		opts = append(opts, Layers(layers))
	}
	if dtype != "" {
		opts = append(opts, Dtype(dtype))
	}
	return opts, nil
}
