package rehearsal

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment knobs of the rehearsal engine (docs/rehearsal.md). Durations
// use Go's syntax ("2s", "50ms").
const (
	EnvInventory = "ROOFLINE_REHEARSAL_INVENTORY"
	EnvLoadTime  = "ROOFLINE_REHEARSAL_LOAD_TIME"
	EnvWarmup    = "ROOFLINE_REHEARSAL_WARMUP"
	EnvTTFT      = "ROOFLINE_REHEARSAL_TTFT"
	EnvITL       = "ROOFLINE_REHEARSAL_ITL"
	EnvAlpha     = "ROOFLINE_REHEARSAL_ALPHA"
	EnvPrefill   = "ROOFLINE_REHEARSAL_PREFILL_TPS"
	EnvOutputLen = "ROOFLINE_REHEARSAL_OUTPUT_LEN"
	EnvFail      = "ROOFLINE_REHEARSAL_FAIL"
	EnvThinking  = "ROOFLINE_REHEARSAL_THINKING"
	EnvToolFmt   = "ROOFLINE_REHEARSAL_TOOL_FORMAT"
	// EnvMemorySkew makes the engine's memory deviate from roofline's model
	// (a test seam for calibration): "activation=+1.5GiB,non_torch=x2".
	EnvMemorySkew = "ROOFLINE_REHEARSAL_MEMORY_SKEW"
	// envRole marks the worker child (vLLM's EngineCore, SGLang's scheduler).
	envRole = "ROOFLINE_REHEARSAL_ROLE"
	// envParent is the API server's pid, given to its worker, which
	// signals it when ready.
	envParent = "ROOFLINE_REHEARSAL_PARENT"
)

// Failure injection (ROOFLINE_REHEARSAL_FAIL): a comma-separated list of a
// classifier class id and/or the lifecycle failures below.
type failSpec struct {
	class          string        // logdiag class id to produce at start
	crash          bool          // the engine dies crashAfter after ready
	crashAfter     time.Duration //
	unhealthy      bool          // /health turns 503 unhealthyAfter after ready
	unhealthyAfter time.Duration //
	neverHealthy   bool          // the start never completes
}

// Failure classes the rehearsal engine can produce (logdiag's ids).
const (
	ClassOOMWeights        = "oom_weights"
	ClassKVTooSmall        = "kv_too_small"
	ClassNoKVMemory        = "no_kv_memory"
	ClassFreeMemBelowUtil  = "free_mem_below_util"
	ClassPortInUse         = "port_in_use"
	ClassMissingFiles      = "missing_files"
	ClassUnsupportedArch   = "unsupported_arch"
	ClassDriverMismatch    = "driver_mismatch"
	ClassNCCLError         = "nccl_error"
	ClassBadFlag           = "bad_flag"
	ClassOOMCudagraph      = "oom_cudagraph"
	ClassSGLangMemFraction = "sglang_mem_fraction"
)

// FailureClasses lists the injectable classes of each engine kind. vLLM has
// no SGLang memory-fraction error; SGLang has neither of vLLM's KV checks.
func FailureClasses(kind string) []string {
	common := []string{ClassOOMWeights, ClassFreeMemBelowUtil, ClassPortInUse, ClassMissingFiles,
		ClassUnsupportedArch, ClassDriverMismatch, ClassNCCLError, ClassBadFlag, ClassOOMCudagraph}
	if kind == KindSGLang {
		return append(common, ClassSGLangMemFraction)
	}
	return append(common, ClassKVTooSmall, ClassNoKVMemory)
}

func parseFail(kind, v string) (failSpec, error) {
	var f failSpec
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, hasVal := strings.Cut(part, "=")
		switch {
		case key == "never_healthy" && !hasVal:
			f.neverHealthy = true
		case key == "crash_after" || key == "unhealthy_after":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return f, fmt.Errorf("%s=%s: %s needs a duration in Go syntax, such as %s=30s", EnvFail, v, key, key)
			}
			if key == "crash_after" {
				f.crash, f.crashAfter = true, d
			} else {
				f.unhealthy, f.unhealthyAfter = true, d
			}
		case !hasVal && contains(FailureClasses(kind), key):
			if f.class != "" {
				return f, fmt.Errorf("%s=%s: give one failure class, not %s and %s", EnvFail, v, f.class, key)
			}
			f.class = key
		default:
			return f, fmt.Errorf("%s=%s: %q is not a failure the %s rehearsal can inject; use one of %s, or crash_after=DUR, unhealthy_after=DUR, never_healthy",
				EnvFail, v, part, kind, strings.Join(FailureClasses(kind), ", "))
		}
	}
	return f, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// knobs are the environment settings, defaults filled in.
type knobs struct {
	inventory  string
	loadTime   time.Duration
	warmup     time.Duration
	ttft, itl  time.Duration
	alpha      float64
	prefill    float64
	outputLen  int
	fail       failSpec
	thinking   string // auto, on, off
	toolFormat string
	skew       memorySkew
}

// memorySkew changes the activation and non-torch memory the engine
// "measures" relative to roofline's estimate, so that plan's prediction and
// the engine's start-up log disagree as they do with a real engine.
type memorySkew struct {
	activation, nonTorch skewTerm
}

type skewTerm struct {
	factor float64 // 0 = unset (1)
	add    int64   // bytes
}

func (t skewTerm) apply(b uint64) uint64 {
	v := float64(b)
	if t.factor > 0 {
		v *= t.factor
	}
	v += float64(t.add)
	return uint64(max(v, 0))
}

func (m memorySkew) set() bool { return m != memorySkew{} }

func parseSkew(v string) (memorySkew, error) {
	var m memorySkew
	bad := fmt.Errorf("%s=%s: use a comma-separated list of activation=... and non_torch=..., each +1.5GiB, -512MiB or x1.3", EnvMemorySkew, v)
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, _ := strings.Cut(part, "=")
		var t *skewTerm
		switch key {
		case "activation":
			t = &m.activation
		case "non_torch":
			t = &m.nonTorch
		default:
			return m, bad
		}
		if f, ok := strings.CutPrefix(val, "x"); ok {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil || x <= 0 {
				return m, bad
			}
			t.factor = x
			continue
		}
		unit := int64(1)
		num := val
		for _, u := range []struct {
			s string
			n int64
		}{{"GiB", 1 << 30}, {"MiB", 1 << 20}} {
			if n, ok := strings.CutSuffix(val, u.s); ok {
				num, unit = n, u.n
				break
			}
		}
		if num == "" || (num[0] != '+' && num[0] != '-') {
			return m, bad
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return m, bad
		}
		t.add = int64(f * float64(unit))
	}
	return m, nil
}

func readKnobs(kind string, getenv func(string) string) (knobs, error) {
	k := knobs{loadTime: 2 * time.Second, warmup: 500 * time.Millisecond, ttft: 50 * time.Millisecond,
		itl: 10 * time.Millisecond, alpha: 0.5, outputLen: 32, thinking: "auto"}
	k.inventory = getenv(EnvInventory)
	dur := func(name string, dst *time.Duration) error {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return fmt.Errorf("%s=%s: not a duration; use Go syntax such as 2s or 50ms", name, v)
			}
			*dst = d
		}
		return nil
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{EnvLoadTime, &k.loadTime}, {EnvWarmup, &k.warmup}, {EnvTTFT, &k.ttft}, {EnvITL, &k.itl}} {
		if err := dur(d.name, d.dst); err != nil {
			return k, err
		}
	}
	num := func(name string, dst *float64) error {
		if v := getenv(name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 {
				return fmt.Errorf("%s=%s: not a number of 0 or more", name, v)
			}
			*dst = f
		}
		return nil
	}
	if err := num(EnvAlpha, &k.alpha); err != nil {
		return k, err
	}
	if err := num(EnvPrefill, &k.prefill); err != nil {
		return k, err
	}
	if v := getenv(EnvOutputLen); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return k, fmt.Errorf("%s=%s: not a token count of 1 or more", EnvOutputLen, v)
		}
		k.outputLen = n
	}
	if v := getenv(EnvThinking); v != "" {
		if v != "auto" && v != "on" && v != "off" {
			return k, fmt.Errorf("%s=%s: use auto, on or off", EnvThinking, v)
		}
		k.thinking = v
	}
	if v := getenv(EnvToolFmt); v != "" {
		ok := false
		var names []string
		for _, f := range toolFormats {
			ok = ok || string(f) == v
			names = append(names, string(f))
		}
		if !ok {
			return k, fmt.Errorf("%s=%s: use one of %s", EnvToolFmt, v, strings.Join(names, ", "))
		}
		k.toolFormat = v
	}
	skew, err := parseSkew(getenv(EnvMemorySkew))
	if err != nil {
		return k, err
	}
	k.skew = skew
	f, err := parseFail(kind, getenv(EnvFail))
	if err != nil {
		return k, err
	}
	k.fail = f
	return k, nil
}
