package config

import "testing"

func TestParsePortRange(t *testing.T) {
	rows := []struct {
		in     string
		lo, hi int
		ok     bool
	}{
		{"20000-29999", 20000, 29999, true},
		{" 4000 - 4000 ", 4000, 4000, true},
		{"20000", 0, 0, false},
		{"80-9000", 0, 0, false},
		{"30000-70000", 0, 0, false},
		{"30000-20000", 0, 0, false},
		{"a-b", 0, 0, false},
	}
	for _, r := range rows {
		lo, hi, err := ParsePortRange(r.in)
		if (err == nil) != r.ok || lo != r.lo || hi != r.hi {
			t.Errorf("ParsePortRange(%q) = %d, %d, %v", r.in, lo, hi, err)
		}
	}
}
