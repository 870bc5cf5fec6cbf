package model

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseIndex(t *testing.T) {
	idx, err := parseIndex([]byte(`{"metadata":{"total_size":1.6060522496e10,"format":"pt"},"weight_map":{"a":"s1","b":"s2","c":"s1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if idx.total != 16060522496 || len(idx.files) != 2 || idx.files["s1"].count != 2 || idx.files["s2"].count != 1 {
		t.Errorf("index %+v", idx)
	}
	var a, c nameSum
	a.add("a")
	a.add("c")
	c.add("c")
	c.add("a")
	if *idx.files["s1"] != a || a != c {
		t.Error("fingerprints depend on order or differ from the headers'")
	}
	for _, tc := range []struct{ in, want string }{
		{`{"metadata":{}}`, "no weight_map"},
		{`{"weight_map":{"a":"../x.safetensors"}}`, "not a file name"},
		{`{"weight_map":{"a":"sub/x.safetensors"}}`, "not a file name"},
		{`{"weight_map":{"a":3}}`, "not a file name"},
		{`{"weight_map":{"a":"x"}} x`, "unexpected data"},
		{`[]`, "want '{'"},
		{"{\"weight_map\":{\"a\":\"\xff\"}}", "not UTF-8"},
	} {
		if _, err := parseIndex([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":123},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{},"x":[1,{"y":"z"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := parseIndex(data)
		if err != nil {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var raw struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		for _, f := range raw.WeightMap {
			if idx.files[f] == nil {
				t.Fatalf("file %q missing from %v", f, idx.files)
			}
		}
	})
}
