package model

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/roofline/roofline/internal/fsx"
)

// Progress receives the bytes hashed so far and the total. Calls are
// serialised; they come every few MiB and once at the end.
type Progress func(done, total int64)

// progressStep is how many bytes pass between Progress calls.
const progressStep = 8 << 20

// DefaultChecksums is the checksum file of folder dir when none is named:
// DIR.sha256 beside it (/models/Qwen3-8B -> /models/Qwen3-8B.sha256).
func DefaultChecksums(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Clean(dir) + ".sha256"
}

// ChecksumsFor returns the checksum file that verify reads for folder dir:
// given, or else DefaultChecksums(dir), which must exist.
func ChecksumsFor(dir, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	path := DefaultChecksums(dir)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no checksum file at %s: pass -checksums FILE, or write one on the source machine with \"roofline model manifest %s\"", path, dir)
	}
	return path, nil
}

// Manifest writes the sha256 of every regular file under dir (symlinks to
// files followed, as Hugging Face cache snapshots are made of them) in
// sha256sum format, "<hex>  <path relative to dir>", sorted by path. Names
// starting with a dot (.cache/huggingface download metadata, .git) are
// skipped, and so is w itself when it is a file inside dir. Files are hashed
// in parallel, GOMAXPROCS at a time, streaming.
func Manifest(dir string, w io.Writer, progress Progress) error {
	_, err := manifest(dir, w, progress)
	return err
}

// WriteManifest writes dir's Manifest to the file at path (DefaultChecksums
// when ""), beside it and renamed, so that an interrupted run never leaves
// a partial list that verify would trust. It returns the path and how many
// files it lists.
func WriteManifest(dir, path string, progress Progress) (string, int, error) {
	if path == "" {
		path = DefaultChecksums(dir)
	}
	n := 0
	err := fsx.Write(path, 0o644, func(w io.Writer) (err error) {
		n, err = manifest(dir, w, progress)
		return err
	})
	return path, n, err
}

// manifest is Manifest, and how many files it lists.
func manifest(dir string, w io.Writer, progress Progress) (int, error) {
	var self os.FileInfo
	if f, ok := w.(*os.File); ok {
		self, _ = f.Stat()
	}
	files, err := listFiles(dir, self)
	if err != nil {
		return 0, err
	}
	sums, err := hashFiles(dir, files, progress)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriter(w)
	for i, f := range files {
		writeLine(bw, sums[i], f.rel)
	}
	return len(files), bw.Flush()
}

// writeLine writes one sha256sum line; like GNU sha256sum it escapes a name
// holding a backslash or newline and marks the line with a leading backslash.
func writeLine(w io.Writer, sum, name string) {
	if strings.ContainsAny(name, "\\\n\r") {
		name = strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`).Replace(name)
		fmt.Fprintf(w, "\\%s  %s\n", sum, name)
		return
	}
	fmt.Fprintf(w, "%s  %s\n", sum, name)
}

type fileEntry struct {
	rel  string // slash-separated, relative to the folder
	size int64
}

func listFiles(dir string, skip os.FileInfo) ([]fileEntry, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("model folder %s: %w", dir, unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("model folder %s is a file, not a folder", dir)
	}
	var out []fileEntry
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, unwrapPath(err))
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Stat(p) // follows symlinks
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, unwrapPath(err))
		}
		if !fi.Mode().IsRegular() || skip != nil && os.SameFile(fi, skip) {
			return nil
		}
		out = append(out, fileEntry{rel: rel(dir, p), size: fi.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b fileEntry) int { return strings.Compare(a.rel, b.rel) })
	return out, nil
}

// hashFiles returns the hex sha256 of each file, hashing GOMAXPROCS files at a time.
func hashFiles(dir string, files []fileEntry, progress Progress) ([]string, error) {
	var total int64
	for _, f := range files {
		total += f.size
	}
	pr := &progressMeter{fn: progress, total: total}
	sums := make([]string, len(files))
	errs := make([]error, len(files))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), max(len(files), 1)); w++ {
		wg.Go(func() {
			buf := make([]byte, 1<<20)
			for i := range work {
				sums[i], errs[i] = hashFile(filepath.Join(dir, filepath.FromSlash(files[i].rel)), buf, pr)
			}
		})
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	pr.finish()
	return sums, errors.Join(errs...)
}

func hashFile(p string, buf []byte, pr *progressMeter) (string, error) {
	f, _, err := fsx.OpenRegular(p)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", p, unwrapPath(err))
	}
	defer f.Close()
	h := sha256.New()
	for {
		n, err := f.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			pr.add(int64(n))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("hashing %s: %w", p, unwrapPath(err))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type progressMeter struct {
	fn          Progress
	total       int64
	mu          sync.Mutex
	done, since int64
}

func (p *progressMeter) add(n int64) {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.since += n
	if p.since >= progressStep {
		p.since = 0
		p.fn(p.done, p.total)
	}
}

func (p *progressMeter) finish() {
	if p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fn(p.done, p.total)
}

// Mismatch is a file whose content differs from its checksum.
type Mismatch struct {
	File string `json:"file"`
	Want string `json:"want"`
	Got  string `json:"got"`
}

// VerifyResult lists what Verify found. Paths are relative to the folder.
type VerifyResult struct {
	Checked    int        `json:"checked"` // files hashed
	Bytes      int64      `json:"bytes"`   // bytes hashed
	Missing    []string   `json:"missing,omitempty"`
	Extra      []string   `json:"extra,omitempty"` // in the folder, not in the list
	Mismatched []Mismatch `json:"mismatched,omitempty"`
}

// OK is true when every listed file is present with its checksum and no other file is.
func (r *VerifyResult) OK() bool {
	return len(r.Missing) == 0 && len(r.Extra) == 0 && len(r.Mismatched) == 0
}

// ParseChecksums reads sha256sum output: "<64 hex>  <path>" (or " *<path>"
// for binary mode), with GNU's backslash escaping. Paths must stay inside the
// folder they describe.
func ParseChecksums(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		escaped := strings.HasPrefix(line, `\`)
		if escaped {
			line = line[1:]
		}
		if len(line) < 67 || (line[64:66] != "  " && line[64:66] != " *") {
			return nil, fmt.Errorf("line %d is not \"<sha256 hex>  <file>\": %.80q", n, line)
		}
		sum := strings.ToLower(line[:64])
		if _, err := hex.DecodeString(sum); err != nil {
			return nil, fmt.Errorf("line %d: %q is not a sha256 in hex", n, line[:64])
		}
		name := line[66:]
		if escaped {
			var err error
			if name, err = unescapeName(name); err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
		}
		name = strings.TrimPrefix(name, "./")
		clean := path.Clean(name)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
			return nil, fmt.Errorf("line %d: %q is outside the model folder; checksum files list paths relative to it", n, name)
		}
		if prev, dup := out[clean]; dup && prev != sum {
			return nil, fmt.Errorf("line %d: %s is listed twice with different checksums", n, clean)
		}
		out[clean] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no checksums in it")
	}
	return out, nil
}

func unescapeName(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("trailing backslash in %q", s)
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		default:
			return "", fmt.Errorf("unknown escape \\%c in %q", s[i], s)
		}
	}
	return b.String(), nil
}

// Verify checks dir against a sha256sum-format file. It returns an error when
// the checksum file or the folder cannot be read; the differences are in the
// result.
func Verify(dir, checksumsFile string, progress Progress) (*VerifyResult, error) {
	f, _, err := fsx.OpenRegular(checksumsFile)
	if err != nil {
		return nil, fmt.Errorf("checksums %s: %w", checksumsFile, unwrapPath(err))
	}
	defer f.Close()
	want, err := ParseChecksums(f)
	if err != nil {
		return nil, fmt.Errorf("checksums %s: %w", checksumsFile, err)
	}
	self, _ := f.Stat()
	files, err := listFiles(dir, self)
	if err != nil {
		return nil, err
	}
	res := &VerifyResult{}
	var todo []fileEntry
	have := map[string]bool{}
	for _, fe := range files {
		have[fe.rel] = true
		if _, ok := want[fe.rel]; ok {
			todo = append(todo, fe)
		} else {
			res.Extra = append(res.Extra, fe.rel)
		}
	}
	for name := range want {
		if have[name] {
			continue
		}
		// Listed files the walk skips (dot files such as .gitattributes, which
		// a plain sha256sum run includes) are checked when present.
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); err == nil && fi.Mode().IsRegular() {
			todo = append(todo, fileEntry{rel: name, size: fi.Size()})
			continue
		}
		res.Missing = append(res.Missing, name)
	}
	slices.Sort(res.Missing)
	slices.SortFunc(todo, func(a, b fileEntry) int { return strings.Compare(a.rel, b.rel) })
	sums, err := hashFiles(dir, todo, progress)
	if err != nil {
		return nil, err
	}
	for i, fe := range todo {
		res.Checked++
		res.Bytes += fe.size
		if sums[i] != want[fe.rel] {
			res.Mismatched = append(res.Mismatched, Mismatch{File: fe.rel, Want: want[fe.rel], Got: sums[i]})
		}
	}
	return res, nil
}
