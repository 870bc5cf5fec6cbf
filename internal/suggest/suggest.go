// Package suggest finds the closest known name for a misspelt one, for
// "did you mean" hints in diagnostics and command-line errors.
package suggest

import "github.com/agext/levenshtein"

// Closest returns the candidate nearest to given by edit distance, or "" when
// none is near enough to be a plausible typo.
func Closest(given string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := levenshtein.Distance(given, c, nil)
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(2, len(given)/3) {
		return ""
	}
	return best
}

// DidYouMeanFlag is DidYouMean for a flag: the suggestion is written as the
// flag is typed ("-detailed-exitcode"), given and candidates without dashes.
func DidYouMeanFlag(given string, candidates []string) string {
	if c := Closest(given, candidates); c != "" {
		return ` Did you mean "-` + c + `"?`
	}
	return ""
}

// DidYouMean returns ` Did you mean "x"?` for the closest candidate, or "".
func DidYouMean(given string, candidates []string) string {
	if c := Closest(given, candidates); c != "" {
		return ` Did you mean "` + c + `"?`
	}
	return ""
}
