package state_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/state/statetest"
)

// TestRoundTrip reads each testdata/roundtrip/*.in.json, writes it back and
// compares with *.out.json (go test -update rewrites those). Writing the
// output again must give the same bytes.
func TestRoundTrip(t *testing.T) {
	ins, _ := filepath.Glob("testdata/roundtrip/*.in.json")
	if len(ins) == 0 {
		t.Fatal("no round-trip fixtures")
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			f, err := state.Read(in)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			got, err := state.Marshal(f)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			out := strings.TrimSuffix(in, ".in.json") + ".out.json"
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s:\n%s", out, got)
			}
			again, err := state.Decode(got)
			if err != nil {
				t.Fatalf("Decode of the output: %v", err)
			}
			if b, _ := state.Marshal(again); !bytes.Equal(b, got) {
				t.Errorf("writing the output again changed it:\n%s", b)
			}
		})
	}
}

// TestMarshalCanonical builds one state two ways that differ only in things
// that carry no meaning; the bytes must be equal.
func TestMarshalCanonical(t *testing.T) {
	a := state.NewFile()
	a.Lineage, a.Serial = "L", 3
	for _, n := range []string{"b", "a", "c"} {
		a.Set(statetest.Server(n))
	}
	b := state.NewFile()
	b.Lineage, b.Serial = "L", 3
	for _, n := range []string{"c", "a", "b"} {
		s := statetest.Server(n)
		s.CreatedAt = s.CreatedAt.In(time.FixedZone("X", 5*3600))
		if n == "a" {
			s.GPUs = []int{0}
			s.Env = map[string]string{"HF_HUB_OFFLINE": "1"}
		}
		b.Set(s)
	}
	a.Servers["c"].Argv, b.Servers["c"].Argv = nil, []string{}
	a.Servers["c"].Env, b.Servers["c"].Env = nil, map[string]string{}
	ab, err := state.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := state.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ab, bb) {
		t.Fatalf("equal states encode differently:\n%s\n---\n%s", ab, bb)
	}
	// Order inside argv is meaning, not noise.
	b.Servers["a"].Argv[3], b.Servers["a"].Argv[4] = b.Servers["a"].Argv[4], b.Servers["a"].Argv[3]
	if bb, _ := state.Marshal(b); bytes.Equal(ab, bb) {
		t.Fatal("reordered argv encodes like the original")
	}
}

func TestReadMissingIsEmpty(t *testing.T) {
	f, err := state.Read(filepath.Join(t.TempDir(), "state.json"))
	if err != nil || f == nil {
		t.Fatalf("Read of a missing file = %v, %v; want an empty state", f, err)
	}
	if f.Serial != 0 || f.Lineage != "" || f.Servers == nil || len(f.Servers) != 0 {
		t.Fatalf("empty state = %+v", f)
	}
}

const goodState = `{"format_version":1,"serial":1,"lineage":"L","roofline_version":"x","servers":{}}`

// TestDecodeErrors: every malformed state is an error that says what is
// wrong, never a panic or a silent empty state.
func TestDecodeErrors(t *testing.T) {
	withServer := func(field string) string {
		s := `{"name":"a","engine":{"name":"e","kind":"vllm","version":"1","identity":"i"},` +
			`"model":{"name":"m","path":"/m","served_name":"m","fingerprint":""},"argv":[],"gpus":[],"host":"","port":1,` +
			`"driver":"process","pid":1,"pgid":1,"start_time":1,"boot_id":"b","log_path":"","status":"ready","config_hash":""` + field + `}`
		return `{"format_version":1,"serial":1,"lineage":"L","roofline_version":"x","servers":{"a":` + s + `}}`
	}
	if _, err := state.Decode([]byte(withServer(""))); err != nil {
		t.Fatalf("the valid base case fails: %v", err)
	}
	tests := map[string]struct {
		in, want string
	}{
		"empty":              {"", "empty"},
		"blank":              {"  \n", "empty"},
		"truncated":          {goodState[:40], "truncated"},
		"truncated server":   {withServer("")[:200], "truncated"},
		"not json":           {"hello", "line 1, column 1"},
		"syntax line":        {"{\n\"format_version\": 1,\n  x}", "line 3, column 3"},
		"array":              {"[1,2]", "not a JSON object"},
		"null":               {"null", "no \"format_version\""},
		"no version":         {`{"serial":1}`, "no \"format_version\""},
		"version string":     {`{"format_version":"1"}`, "not a whole number"},
		"version fraction":   {`{"format_version":1.5}`, "not a whole number"},
		"version zero":       {`{"format_version":0}`, "not a valid version"},
		"version huge":       {`{"format_version":1e40}`, "not a whole number"},
		"newer":              {fmt.Sprintf(`{"format_version":%d,"roofline_version":"9.9.9","anything":[]}`, state.CurrentFormat+1), "state written by a newer roofline"},
		"trailing data":      {goodState + `{"x":1}`, "line 1, column 82: invalid character '{' after top-level value"},
		"trailing garbage":   {goodState + ` xx`, "after top-level value"},
		"unknown field":      {`{"format_version":1,"serial":1,"lineage":"L","servers":{},"extra":1}`, `unknown field "extra"`},
		"no lineage":         {`{"format_version":1,"serial":1,"lineage":"","servers":{}}`, "lineage"},
		"serial negative":    {`{"format_version":1,"serial":-1,"lineage":"L","servers":{}}`, "serial cannot hold number -1"},
		"serial huge":        {`{"format_version":1,"serial":1e30,"lineage":"L","servers":{}}`, "serial cannot hold number 1e30"},
		"serial overflow":    {`{"format_version":1,"serial":18446744073709551616,"lineage":"L","servers":{}}`, "serial cannot hold"},
		"pid huge":           {withServer(`,"pid":99999999999999999999`), "pid cannot hold"},
		"start_time string":  {withServer(`,"start_time":"1"`), "start_time cannot hold"},
		"null server":        {`{"format_version":1,"serial":1,"lineage":"L","servers":{"a":null}}`, `servers["a"] is null`},
		"name mismatch":      {strings.Replace(withServer(""), `"name":"a"`, `"name":"b"`, 1), "key and the name"},
		"bad port":           {withServer(`,"port":70000`), "not a TCP port"},
		"negative pid":       {withServer(`,"pid":-4`), "cannot be negative"},
		"bad status":         {withServer(`,"status":"running"`), `status "running"`},
		"bad driver":         {withServer(`,"driver":"k8s"`), `driver "k8s"`},
		"negative gpu":       {withServer(`,"gpus":[0,-1]`), "GPU index -1"},
		"bad time":           {withServer(`,"created_at":"yesterday"`), "RFC 3339"},
		"bad gate raw":       {withServer(`,"gate":{"passed":true,"health":[}`), "line 1"},
		"unknown nested":     {withServer(`,"footprint":{"weights":1}`), `unknown field "weights"`},
		"deposed name":       {withServer(`,"deposed":{"name":"b","driver":"process","status":"ready","engine":{},"model":{}}`), "keeps its server's name"},
		"deposed nested":     {withServer(`,"deposed":{"name":"a","driver":"process","status":"ready","deposed":{"name":"a"}}`), "deposed instance of its own"},
		"deposed bad status": {withServer(`,"deposed":{"name":"a","driver":"process","status":"up"}`), `deposed: status "up"`},
		"proxy negative pid": {withServer(`,"proxy":{"pid":-1,"pgid":1,"start_time":1,"boot_id":"b"}`), "proxy: pid"},
		"bad backend port":   {withServer(`,"backend_port":65536`), "backend_port 65536"},
		"servers not object": {`{"format_version":1,"serial":1,"lineage":"L","servers":[]}`, "servers cannot hold array"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, err := state.Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("Decode succeeded with %+v; want an error containing %q", f, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestDecodeErrorsV2: the current format's identity is checked as format 1's
// was.
func TestDecodeErrorsV2(t *testing.T) {
	withInstance := func(inst, extra string) string {
		return `{"format_version":2,"serial":1,"lineage":"L","roofline_version":"x","servers":{"a":{"name":"a",` +
			`"engine":{"name":"e","kind":"vllm","version":"1","identity":"i"},"model":{"name":"m","path":"/m","served_name":"m","fingerprint":""},` +
			`"argv":[],"gpus":[],"host":"","port":1,"instance":` + inst + `,"status":"ready","config_hash":""` + extra + `}}}`
	}
	good := `{"driver":"process","id":"7","pid":7,"group":7,"start_time":1,"boot_id":"b"}`
	if _, err := state.Decode([]byte(withInstance(good, ""))); err != nil {
		t.Fatalf("the valid base case fails: %v", err)
	}
	tests := map[string]struct{ in, want string }{
		"id and pid disagree": {withInstance(`{"driver":"process","id":"8","pid":7}`, ""), `id "8" and pid 7 disagree`},
		"negative pid":        {withInstance(`{"driver":"docker","id":"c","pid":-1}`, ""), "cannot be negative"},
		"no driver":           {withInstance(`{"id":"c"}`, ""), "driver is empty"},
		"format 1 field":      {withInstance(`{"driver":"process","pgid":7}`, ""), `unknown field "pgid"`},
		"proxy disagrees":     {withInstance(good, `,"proxy":{"driver":"process","id":"1","pid":2}`), `].proxy: id "1" and pid 2 disagree`},
		"loose pid":           {withInstance(good, `,"pid":7`), `unknown field "pid"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, err := state.Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("Decode succeeded with %+v; want an error containing %q", f, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// TestCorruptNamesBackup: a corrupt state is an error that names the
// backup and says how to restore it, in each backup situation.
func TestCorruptNamesBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	backup := path + ".backup"
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(path, goodState[:30])

	_, err := state.Read(path)
	var ce *state.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("Read = %v; want a *CorruptError", err)
	}
	for _, want := range []string{path, "truncated", "There is no backup", backup, "changed nothing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no backup: error lacks %q:\n%s", want, err)
		}
	}

	write(backup, strings.Replace(goodState, `"serial":1`, `"serial":41`, 1))
	_, err = state.Read(path)
	for _, want := range []string{"serial 41", "cp " + backup + " " + path} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("good backup: error lacks %q:\n%v", want, err)
		}
	}

	write(backup, "{")
	_, err = state.Read(path)
	if err == nil || !strings.Contains(err.Error(), "cannot be used either") {
		t.Errorf("corrupt backup: error = %v", err)
	}

	// The file itself is left alone.
	if b, _ := os.ReadFile(path); string(b) != goodState[:30] {
		t.Errorf("Read changed the corrupt file to %q", b)
	}
}

func TestNewerVersionError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	newer := state.CurrentFormat + 1
	os.WriteFile(path, []byte(fmt.Sprintf(`{"format_version":%d,"roofline_version":"2.0.0","servers":"whatever"}`, newer)), 0o600)
	_, err := state.Read(path)
	var ve *state.VersionError
	if !errors.As(err, &ve) || ve.Found != int64(newer) || ve.WrittenBy != "2.0.0" || ve.Path != path {
		t.Fatalf("Read = %#v; want a *VersionError for format %d by 2.0.0", err, newer)
	}
	if !strings.Contains(err.Error(), "Upgrade roofline") {
		t.Errorf("error does not say what to do: %v", err)
	}
}

func TestMarshalRefusesInvalid(t *testing.T) {
	f := state.NewFile()
	f.Set(statetest.Server("a"))
	if _, err := state.Marshal(f); err == nil {
		t.Error("Marshal of a state without lineage succeeded")
	}
	f.Lineage = "L"
	f.Servers["b"] = f.Servers["a"]
	if _, err := state.Marshal(f); err == nil || !strings.Contains(err.Error(), "bug") {
		t.Errorf("Marshal with a key/name mismatch = %v", err)
	}
}

// TestUpgrade reads each older state in testdata/v1 (format 1, as roofline
// wrote them before the identity became one "instance" object) and
// testdata/v2 (format 2, as the last release wrote them) and compares the
// upgrade, written in the current format, with the *.upgraded files (go test
// -update rewrites those). The upgrade must keep every identity field: a
// lost pid or container id is a lost server.
func TestUpgrade(t *testing.T) {
	ins, _ := filepath.Glob("testdata/v[12]/*.json")
	if len(ins) < 6 {
		t.Fatalf("%d older-format fixtures, want 3 of format 1 and 3 of format 2", len(ins))
	}
	for _, in := range ins {
		name := filepath.Base(filepath.Dir(in)) + "/" + strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			f, err := state.Read(in)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if f.FormatVersion != state.CurrentFormat {
				t.Fatalf("upgraded format_version = %d; want %d", f.FormatVersion, state.CurrentFormat)
			}
			got, err := state.Marshal(f)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			out := strings.TrimSuffix(in, ".json") + ".upgraded"
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("upgrade differs from %s:\n%s", out, got)
			}
		})
	}
}

// TestUpgradeV1Identity checks the identity fields of the upgrade one by
// one, so that a wrong golden cannot hide a lost field.
func TestUpgradeV1Identity(t *testing.T) {
	f, err := state.Read("testdata/v1/full.json")
	if err != nil {
		t.Fatal(err)
	}
	q := f.Servers["qwen3"]
	want := state.Instance{Driver: "process", ID: "4242", PID: 4242, Group: 4242, StartTime: 1234567,
		BootID: "6b1a0d2e-55c7-4a53-9a7e-1c2d3e4f5a6b", LaunchID: "l-7f3a", LogPath: "/srv/rl/.roofline/logs/qwen3.log"}
	if !reflect.DeepEqual(q.Instance, want) {
		t.Errorf("qwen3 instance = %+v\nwant %+v", q.Instance, want)
	}
	if p := q.Proxy; p == nil || p.Driver != "process" || p.ID != "4200" || p.PID != 4200 || p.Group != 4200 || p.StartTime != 1234000 || len(p.Cmdline) != 4 {
		t.Errorf("qwen3 proxy = %+v; want process 4200 with its cmdline", p)
	}
	if d := f.Servers["qwen3_next"].Deposed; d == nil || d.ID != "30001" || d.PID != 30001 || d.Driver != "process" {
		t.Errorf("deposed = %+v; want process 30001", d)
	}
	m, err := state.Read("testdata/v1/minimal.json")
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Servers["docker_one"]; d.Driver != "docker" || d.ID != "f00dfeed" || d.PID != 0 || d.Running() != true {
		t.Errorf("docker_one = %+v; want docker container f00dfeed", d.Instance)
	}
}
