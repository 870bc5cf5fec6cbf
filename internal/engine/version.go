package engine

import (
	"strconv"
	"strings"
)

// KindName is how messages name an engine kind: "vLLM", "SGLang".
func KindName(kind string) string {
	if k := Lookup(kind); k != nil {
		return k.Display
	}
	return kind
}

// displayName is "vLLM 0.16.0".
func displayName(kind, version string) string {
	if version == "" {
		return KindName(kind)
	}
	return KindName(kind) + " " + version
}

// SameVersion reports whether an installed version satisfies a pinned one.
// A leading "v" is ignored, and a local build label ("0.16.0+cu129") only
// counts when the pin names one.
func SameVersion(pinned, installed string) bool {
	p := strings.TrimPrefix(strings.TrimSpace(pinned), "v")
	i := strings.TrimPrefix(strings.TrimSpace(installed), "v")
	if !strings.Contains(p, "+") {
		i, _, _ = strings.Cut(i, "+")
	}
	return p == i
}

// CompareVersions orders two engine versions the way PEP 440 does for the
// forms engines use: release numbers, then a pre-release (a, b, rc, dev)
// before the release and a post-release (.postN) after it. Local labels
// ("+cu129") are ignored. It returns -1, 0 or 1.
func CompareVersions(a, b string) int {
	ra, sa := splitVersion(a)
	rb, sb := splitVersion(b)
	for i := 0; i < max(len(ra), len(rb)); i++ {
		var x, y int
		if i < len(ra) {
			x = ra[i]
		}
		if i < len(rb) {
			y = rb[i]
		}
		if x != y {
			return cmpInt(x, y)
		}
	}
	return cmpInt(suffixRank(sa), suffixRank(sb))
}

func cmpInt(x, y int) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// splitVersion returns the release numbers and the rest ("rc1", "post2").
func splitVersion(v string) ([]int, string) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	v, _, _ = strings.Cut(v, "+")
	var nums []int
	for v != "" {
		i := 0
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == 0 {
			break
		}
		n, _ := strconv.Atoi(v[:i])
		nums = append(nums, n)
		v = v[i:]
		if strings.HasPrefix(v, ".") && len(v) > 1 && v[1] >= '0' && v[1] <= '9' {
			v = v[1:]
			continue
		}
		break
	}
	return nums, strings.TrimLeft(strings.ToLower(v), ".-_")
}

// suffixRank orders what follows the release numbers: dev < a < b < rc <
// release < post, then by the number that follows ("post2" < "post10").
func suffixRank(s string) int {
	kind := 0
	switch {
	case s == "":
		return 0
	case strings.HasPrefix(s, "post"):
		kind, s = 1, s[4:]
	case strings.HasPrefix(s, "rc"):
		kind, s = -1, s[2:]
	case strings.HasPrefix(s, "b"):
		kind, s = -2, s[1:]
	case strings.HasPrefix(s, "a"):
		kind, s = -3, s[1:]
	default:
		kind = -4 // dev and anything unknown
	}
	n := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9' && n < 1e6; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return kind*10_000_000 + n
}

// parseVersionOutput finds the version in what `vllm --version` or
// `python -c "print(sglang.__version__)"` printed: the last line that looks
// like a version (log lines may come before it).
func parseVersionOutput(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) == 0 {
			continue
		}
		v := strings.TrimPrefix(f[len(f)-1], "v")
		if looksLikeVersion(v) {
			return v
		}
	}
	return ""
}

func looksLikeVersion(v string) bool {
	if v == "" || v[0] < '0' || v[0] > '9' || !strings.Contains(v, ".") || len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !isAlnum(c) && !strings.ContainsRune(".+-_", rune(c)) {
			return false
		}
	}
	return true
}
