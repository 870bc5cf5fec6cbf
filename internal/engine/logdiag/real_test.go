package logdiag_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealExcerpts classifies excerpts quoted from public vLLM and SGLang
// issues (testdata/real/sources.tsv names each one's source). It requires at
// least 95 % right and no excerpt given a wrong known cause: "unknown" is a
// miss, a wrong class is a lie. Every known cause shows its evidence lines.
func TestRealExcerpts(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "real", "sources.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := map[string]bool{}
	for _, c := range Classes() {
		known[c.ID] = true
	}
	total, right := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 || !strings.HasPrefix(cols[2], "https://github.com/") || !known[cols[1]] {
			t.Fatalf("sources.tsv: %q: want file, a class id, a github URL", line)
		}
		b, err := os.ReadFile(filepath.Join("testdata", "real", cols[0]))
		if err != nil {
			t.Fatal(err)
		}
		total++
		d := Classify(b)
		switch {
		case d.Class == cols[1]:
			right++
		case d.Class == Unknown:
			t.Logf("miss: %s (%s) is %s, classified unknown", cols[0], cols[2], cols[1])
		default:
			t.Errorf("wrong cause: %s (%s) is %s, classified %s on %q", cols[0], cols[2], cols[1], d.Class, d.Evidence)
		}
		checkEvidence(t, b, d)
		if d.Class != Unknown && len(d.Evidence) == 0 {
			t.Errorf("%s: %s without an evidence line", cols[0], d.Class)
		}
	}
	if total < 30 {
		t.Errorf("%d real excerpts, want at least 30", total)
	}
	rate := float64(right) / float64(max(total, 1))
	t.Logf("%d of %d real excerpts classified right (%.1f %%)", right, total, 100*rate)
	if rate < 0.95 {
		t.Errorf("%.1f %% of the real excerpts classified right, want at least 95 %%", 100*rate)
	}
}
