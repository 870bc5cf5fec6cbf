package secret

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestIsName(t *testing.T) {
	for name, want := range map[string]bool{
		"HF_TOKEN": true, "OPENAI_API_KEY": true, "--api-key": true, "api_key": true, "db.password": true,
		"TOKENIZERS_PARALLELISM": false, "--max-num-batched-tokens": false, "--ssl-keyfile": false, "monkey": false,
		"api_key_file": false, "HF_TOKEN_PATH": false, "--api-key-file": false, "file": false, "SECRET_DIR": false, "KEY": true,
	} {
		if IsName(name) != want {
			t.Errorf("IsName(%q) = %v", name, !want)
		}
	}
}

func TestHashAgainstKeepsAnUnchangedHash(t *testing.T) {
	h := Hash("sk-1")
	if !IsHash(h) || !Matches(h, "sk-1") || Matches(h, "sk-2") || strings.Contains(h, "sk-1") {
		t.Fatalf("hash %q", h)
	}
	if HashAgainst("sk-1", h) != h {
		t.Error("an unchanged value must keep its stored hash")
	}
	if r := HashAgainst("sk-2", h); r == h || !Matches(r, "sk-2") {
		t.Error("a rotated value must hash anew")
	}
	if Hash("sk-1") == h {
		t.Error("two hashes of one value must differ (salted)")
	}
}

func TestSetMasksWholeAndEmbeddedValues(t *testing.T) {
	s := NewSet("sk-longsecret", "1", "tok\n")
	for in, want := range map[string]string{
		"Authorization: Bearer sk-longsecret": "Authorization: Bearer " + Shown,
		"1":                                   Shown,
		"port 18000":                          "port 18000", // short values only as a whole
		"token tok read":                      "token tok read",
		"tok":                                 Shown,
	} {
		if got := s.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
	var buf bytes.Buffer
	w := s.Writer(&buf)
	fmt.Fprintf(w, "Error: engine rejected --api-key=%s\n", "sk-longsecret")
	if strings.Contains(buf.String(), "sk-longsecret") || !strings.Contains(buf.String(), Shown) {
		t.Errorf("writer: %q", buf.String())
	}
	var nilSet *Set
	if nilSet.Mask("x") != "x" || nilSet.In("x") {
		t.Error("a nil Set masks nothing")
	}
}

func TestSetSpans(t *testing.T) {
	s := NewSet("sk-abcd", "abc", "hf_x")
	for _, c := range []struct {
		text string
		want [][2]int
	}{
		{"no secret here", nil},
		{"key sk-abcd and sk-abcd", [][2]int{{4, 11}, {16, 23}}},
		{"abc is too short to be found inside", nil},
		{"hf_xhf_x", [][2]int{{0, 4}, {4, 8}}},
	} {
		if got := s.Spans(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Spans(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if (*Set)(nil).Spans("sk-abcd") != nil {
		t.Error("a nil set has no spans")
	}
}
