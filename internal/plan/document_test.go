package plan

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/roofline/roofline/internal/jsonfill"
	"github.com/roofline/roofline/internal/jsonplan"
)

// TestDocumentKeepsEveryField fills every field of the plan's JSON form and
// compares the keys of its JSON with the document's: the conversion drops
// nothing, and renames only what docs/json.md lists for format 2.0. A field
// added to a state, plan or journal record fails here until the document
// (internal/jsonplan) carries it too, with its version noted.
func TestDocumentKeepsEveryField(t *testing.T) {
	var j JSONPlan
	jsonfill.Fill(reflect.ValueOf(&j).Elem(), 3)
	j.Summary = map[string]int{"add": 1, "change": 1, "destroy": 1}
	for i := range j.ResourceChanges {
		// sensitiveMarks' shape
		j.ResourceChanges[i].BeforeSensitive = map[string]any{"argv": []bool{true}, "env": map[string]bool{"K": true}}
		j.ResourceChanges[i].AfterSensitive = map[string]any{"argv": []bool{false, true}, "env": map[string]bool{"K": true}}
		// The state keeps the gates' reports as JSON; views
		// TestGateReportsKeepTheirBytes checks the document's report
		// types against the gate's own.
		for s := j.ResourceChanges[i].Before; s != nil; s = s.Deposed {
			if s.Gate != nil {
				s.Gate.Health = filledJSON[jsonplan.HealthReport](t)
				s.Gate.Smoke = filledJSON[jsonplan.SmokeReport](t)
				s.Gate.Bench = filledJSON[jsonplan.BenchResult](t)
			}
		}
	}
	internal := keys(t, &j)
	doc := keys(t, Document(&j))
	// The plan file's own fields, not in the document.
	for _, k := range []string{"sealed_secrets", "mac"} {
		internal = slices.DeleteFunc(internal, func(s string) bool { return s == k })
	}
	// 2.0: the bench gate is named as in HCL.
	renamed := map[string]string{}
	for goName, hcl := range map[string]string{"Concurrency": "concurrency", "RequestRate": "request_rate", "Requests": "requests",
		"InputTokens": "input_tokens", "OutputTokens": "output_tokens", "MinOutputTokensPerSecond": "min_output_tokens_per_second",
		"MinRequestsPerSecond": "min_requests_per_second", "MaxTTFTP99": "max_ttft_p99", "MaxTPOTP99": "max_tpot_p99",
		"MaxITLP99": "max_itl_p99", "MaxFailedRequests": "max_failed_requests"} {
		renamed["resource_changes[].after.gate.bench."+goName] = "resource_changes[].after.gate.bench." + hcl
	}
	for i, k := range internal {
		if n, ok := renamed[k]; ok {
			internal[i] = n
			delete(renamed, k)
		}
	}
	for k := range renamed {
		t.Errorf("the internal form has no %s any more: the rename list is stale", k)
	}
	sort.Strings(internal)
	for _, k := range internal {
		if !slices.Contains(doc, k) {
			t.Errorf("the plan document lacks %s: add it to internal/jsonplan and plan/document.go, and note it in docs/json.md", k)
		}
	}
	for _, k := range doc {
		if !slices.Contains(internal, k) {
			t.Errorf("the plan document has %s, which the plan's records do not", k)
		}
	}
	if len(doc) < 200 {
		t.Fatalf("only %d keys: the filler is broken", len(doc))
	}
}

// keys lists the JSON object keys of v as paths ("resource_changes[].before.name").
func keys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(x any, path string)
	walk = func(x any, path string) {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				p := k
				if path != "" {
					p = path + "." + k
				}
				// maps keyed by data (env, installs, ...) have the key "k"
				if k == "k" || k == "K" {
					p = path + ".*"
				}
				seen[p] = true
				walk(v, p)
			}
		case []any:
			for _, v := range x {
				walk(v, path+"[]")
			}
		}
	}
	walk(x, "")
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// filledJSON is a T with every field set, as JSON.
func filledJSON[T any](t *testing.T) json.RawMessage {
	t.Helper()
	var v T
	jsonfill.Fill(reflect.ValueOf(&v).Elem(), 2)
	b, err := json.Marshal(&v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
