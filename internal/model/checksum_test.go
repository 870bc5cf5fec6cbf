package model_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestManifestGolden pins the manifest of the Tiny synthetic model: format,
// order and hashes (sha256sum would print the same lines).
func TestManifestGolden(t *testing.T) {
	dir := write(t, modeltest.Tiny, modeltest.Shards(2))
	mkfile(t, filepath.Join(dir, "original", "params.json"), "{}\n")
	mkfile(t, filepath.Join(dir, ".cache", "huggingface", "download", "x.metadata"), "skipped")
	var buf bytes.Buffer
	var calls, lastDone, lastTotal int64
	err := model.Manifest(dir, &buf, func(done, total int64) { calls++; lastDone, lastTotal = done, total })
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || lastDone != lastTotal || lastTotal == 0 {
		t.Errorf("progress: %d calls, last %d/%d", calls, lastDone, lastTotal)
	}
	golden := filepath.Join("testdata", "tiny.sha256")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("manifest differs from %s (run with -update if the synthetic model changed on purpose):\n%s", golden, buf.String())
	}
}

func TestVerify(t *testing.T) {
	dir := write(t, modeltest.Tiny, modeltest.Shards(2))
	sums := filepath.Join(t.TempDir(), "tiny.sha256")
	writeManifest(t, dir, sums)

	res, err := model.Verify(dir, sums, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Checked != 7 || res.Bytes == 0 {
		t.Fatalf("clean folder: %+v", res)
	}

	// Change one byte of a shard, delete a file, add one.
	shard := filepath.Join(dir, "model-00002-of-00002.safetensors")
	f, err := os.OpenFile(shard, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteAt([]byte{1}, 1000)
	f.Close()
	if err := os.Remove(filepath.Join(dir, "generation_config.json")); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(dir, "notes.txt"), "x")

	res, err = model.Verify(dir, sums, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() {
		t.Fatal("OK after changes")
	}
	if !reflect.DeepEqual(res.Missing, []string{"generation_config.json"}) || !reflect.DeepEqual(res.Extra, []string{"notes.txt"}) ||
		len(res.Mismatched) != 1 || res.Mismatched[0].File != "model-00002-of-00002.safetensors" || res.Mismatched[0].Got == res.Mismatched[0].Want {
		t.Errorf("result %+v", res)
	}
}

// A manifest written inside the folder neither lists itself nor counts as extra.
func TestManifestInsideFolder(t *testing.T) {
	dir := write(t, modeltest.Tiny)
	sums := filepath.Join(dir, "SHA256SUMS")
	writeManifest(t, dir, sums)
	data, _ := os.ReadFile(sums)
	if strings.Contains(string(data), "SHA256SUMS") {
		t.Errorf("manifest lists itself:\n%s", data)
	}
	res, err := model.Verify(dir, sums, nil)
	if err != nil || !res.OK() {
		t.Errorf("verify: %+v, %v", res, err)
	}
}

// WriteManifest writes DIR.sha256 when no path is given, or the file named,
// inside the folder too (neither lists itself), and counts the files listed.
func TestWriteManifest(t *testing.T) {
	dir := write(t, modeltest.Tiny)
	for _, given := range []string{"", filepath.Join(dir, "SHA256SUMS")} {
		path, n, err := model.WriteManifest(dir, given, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := given; (want == "" && path != model.DefaultChecksums(dir)) || (want != "" && path != want) {
			t.Errorf("given %q: wrote %s", given, path)
		}
		data, _ := os.ReadFile(path)
		if lines := strings.Count(string(data), "\n"); n != lines || n == 0 || strings.Contains(string(data), "SHA256SUMS") {
			t.Errorf("given %q: %d files for %d lines:\n%s", given, n, lines, data)
		}
		if res, err := model.Verify(dir, path, nil); err != nil || !res.OK() {
			t.Errorf("given %q: verify %+v, %v", given, res, err)
		}
	}
	// A symlink at the destination is refused (fsx.Write), not written through.
	link := filepath.Join(t.TempDir(), "link.sha256")
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := model.WriteManifest(dir, link, nil); err == nil {
		t.Error("wrote through a symlink")
	}
}

// Dot files a plain `sha256sum` run lists (.gitattributes) are checked when listed.
func TestVerifyListedDotFile(t *testing.T) {
	dir := write(t, modeltest.Tiny)
	sums := filepath.Join(t.TempDir(), "s")
	writeManifest(t, dir, sums)
	mkfile(t, filepath.Join(dir, ".gitattributes"), "*.safetensors filter=lfs\n")
	f, _ := os.OpenFile(sums, os.O_APPEND|os.O_WRONLY, 0)
	// sha256 of "*.safetensors filter=lfs\n" is not this; the mismatch proves it was hashed.
	f.WriteString(strings.Repeat("0", 64) + "  .gitattributes\n")
	f.Close()
	res, err := model.Verify(dir, sums, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Mismatched) != 1 || res.Mismatched[0].File != ".gitattributes" || len(res.Missing)+len(res.Extra) != 0 {
		t.Errorf("result %+v", res)
	}
}

func TestChecksumNamesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a b.json", "new\nline", `back\slash`, "sub/ünï.txt"}
	for _, n := range names {
		mkfile(t, filepath.Join(dir, filepath.FromSlash(n)), n)
	}
	var buf bytes.Buffer
	if err := model.Manifest(dir, &buf, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `\`+"") || !strings.Contains(buf.String(), `  new\nline`) {
		t.Errorf("names not escaped:\n%s", buf.String())
	}
	m, err := model.ParseChecksums(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, ok := m[n]; !ok {
			t.Errorf("%q lost in the round trip: %v", n, m)
		}
	}
}

func TestParseChecksumsErrors(t *testing.T) {
	h := strings.Repeat("a", 64)
	for _, tc := range []struct{ in, want string }{
		{"", "no checksums"},
		{"abc  file\n", "line 1 is not"},
		{strings.Repeat("g", 64) + "  f\n", "not a sha256"},
		{h + "  ../etc/passwd\n", "outside the model folder"},
		{h + "  /etc/passwd\n", "outside the model folder"},
		{h + "  a/../../x\n", "outside the model folder"},
		{h + "  f\n" + strings.Repeat("b", 64) + "  f\n", "listed twice"},
		{`\` + h + `  a\q` + "\n", `unknown escape`},
	} {
		_, err := model.ParseChecksums(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
	m, err := model.ParseChecksums(strings.NewReader(strings.ToUpper(h) + " *./bin/x\r\n\n"))
	if err != nil || m["bin/x"] != h {
		t.Errorf("binary-mode line: %v %v", m, err)
	}
}

func TestVerifyErrors(t *testing.T) {
	dir := write(t, modeltest.Tiny)
	if _, err := model.Verify(dir, filepath.Join(dir, "absent.sha256"), nil); err == nil || !strings.Contains(err.Error(), "absent.sha256") {
		t.Errorf("err = %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	mkfile(t, bad, "not a checksum\n")
	if _, err := model.Verify(dir, bad, nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err = %v", err)
	}
}

// Progress calls are serialised even though files are hashed in parallel.
func TestProgressSerialised(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c", "d"} {
		if err := os.WriteFile(filepath.Join(dir, n), make([]byte, 20<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var last int64
	err := model.Manifest(dir, &bytes.Buffer{}, func(done, total int64) {
		if !mu.TryLock() {
			t.Error("concurrent progress call")
			return
		}
		defer mu.Unlock()
		if done < last || total != 80<<20 {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
	})
	if err != nil || last != 80<<20 {
		t.Errorf("err %v, last %d", err, last)
	}
}

func FuzzParseChecksums(f *testing.F) {
	h := strings.Repeat("0", 64)
	f.Add(h + "  a\n" + h + " *b/c\n")
	f.Add(`\` + h + `  a\nb\\c` + "\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := model.ParseChecksums(strings.NewReader(s))
		if err != nil {
			return
		}
		for name, sum := range m {
			if len(sum) != 64 || strings.HasPrefix(name, "/") || name == ".." || strings.HasPrefix(name, "../") {
				t.Fatalf("accepted %q -> %q", name, sum)
			}
		}
	})
}

func writeManifest(t *testing.T, dir, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := model.Manifest(dir, f, nil); err != nil {
		t.Fatal(err)
	}
}

// GNU sha256sum accepts what Manifest writes, escaped names included.
func TestManifestMatchesSha256sum(t *testing.T) {
	bin, err := exec.LookPath("sha256sum")
	if err != nil {
		t.Skip("sha256sum not installed")
	}
	dir := write(t, modeltest.Tiny)
	mkfile(t, filepath.Join(dir, "odd\nname"), "x")
	sums := filepath.Join(t.TempDir(), "s")
	writeManifest(t, dir, sums)
	cmd := exec.Command(bin, "-c", "--strict", sums)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c: %v\n%s", err, out)
	}
}

// Symlinks to files are followed: a cache snapshot hashes like its blobs.
func TestManifestFollowsSymlinks(t *testing.T) {
	blobs := write(t, modeltest.Tiny)
	snap := t.TempDir()
	entries, _ := os.ReadDir(blobs)
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(blobs, e.Name()), filepath.Join(snap, e.Name())); err != nil {
			t.Skip("no symlinks here:", err)
		}
	}
	var a, b bytes.Buffer
	if err := model.Manifest(blobs, &a, nil); err != nil {
		t.Fatal(err)
	}
	if err := model.Manifest(snap, &b, nil); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || a.Len() == 0 {
		t.Errorf("blobs:\n%s\nsnapshot:\n%s", a.String(), b.String())
	}
}

func TestDefaultChecksums(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{"/models/Qwen3-8B", "/models/Qwen3-8B.sha256"},
		{"/models/Qwen3-8B/", "/models/Qwen3-8B.sha256"},
		{"/models/./Qwen3-8B", "/models/Qwen3-8B.sha256"},
		{"Qwen3-8B", filepath.Join(wd, "Qwen3-8B.sha256")},
	} {
		if got := model.DefaultChecksums(c.dir); got != c.want {
			t.Errorf("DefaultChecksums(%q) = %q, want %q", c.dir, got, c.want)
		}
	}
}

func TestChecksumsFor(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Qwen3-8B")
	for _, c := range []struct {
		name, given, want, wantErr string
		write                      bool
	}{
		{name: "given", given: "/x/sums.txt", want: "/x/sums.txt"},
		{name: "beside the folder, missing", wantErr: "no checksum file at " + dir + ".sha256: pass -checksums FILE, or write one on the source machine with \"roofline model manifest " + dir + "\""},
		{name: "beside the folder", write: true, want: dir + ".sha256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.write {
				if err := os.WriteFile(dir+".sha256", nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := model.ChecksumsFor(dir, c.given)
			switch {
			case c.wantErr != "" && (err == nil || err.Error() != c.wantErr):
				t.Errorf("err = %v, want %q", err, c.wantErr)
			case c.wantErr == "" && (err != nil || got != c.want):
				t.Errorf("ChecksumsFor = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
