package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/roofline/roofline/internal/fsx"
)

// maxSnapshotBytes bounds what the reader loads: a snapshot of 64 GPUs with
// hundreds of processes is well under 1 MiB.
const maxSnapshotBytes = 16 << 20

// fileInventory reads a snapshot file every time it is asked, so a file
// rewritten between plan and apply is noticed.
type fileInventory struct{ path string }

var _ Inventory = (*fileInventory)(nil)

// NewFile returns an Inventory that reads the snapshot file at path (written
// by `roofline gpu -json`).
func NewFile(path string) Inventory { return &fileInventory{path: path} }

func (f *fileInventory) Snapshot(ctx context.Context) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ReadSnapshotFile(f.path)
}

// ReadSnapshotFile reads and checks a snapshot file. The snapshot's Source
// becomes "file:<path>".
func ReadSnapshotFile(path string) (*Snapshot, error) {
	f, _, err := fsx.OpenRegular(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("GPU snapshot %s does not exist. Write one on the GPU host with `roofline gpu -json > %s`", path, path)
		}
		return nil, fmt.Errorf("GPU snapshot: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSnapshotBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GPU snapshot %s: %w", path, err)
	}
	if len(data) > maxSnapshotBytes {
		return nil, fmt.Errorf("GPU snapshot %s is larger than %d MiB; this is not a file `roofline gpu -json` wrote", path, maxSnapshotBytes>>20)
	}
	s, err := DecodeSnapshot(data)
	if err != nil {
		return nil, fmt.Errorf("GPU snapshot %s: %w", path, err)
	}
	s.Source = "file:" + path
	return s, nil
}

// DecodeSnapshot parses and checks the JSON form of a snapshot. It reads the
// format version first, so a file from a newer roofline gets a version error
// rather than confusing field errors.
func DecodeSnapshot(data []byte) (*Snapshot, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty. Write a snapshot on the GPU host with `roofline gpu -json`")
	}
	var sniff struct {
		FormatVersion *json.RawMessage `json:"format_version"`
	}
	if err := json.Unmarshal(data, &sniff); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) && typ.Field == "" {
			return nil, fmt.Errorf("a GPU snapshot is a JSON object, this is a JSON %s", typ.Value)
		}
		return nil, fmt.Errorf("not valid JSON: %s", jsonErr(err, data))
	}
	if sniff.FormatVersion == nil {
		return nil, errors.New("no format_version: this is not a GPU snapshot written by `roofline gpu -json`")
	}
	var version int
	if err := json.Unmarshal(*sniff.FormatVersion, &version); err != nil {
		return nil, fmt.Errorf("format_version must be a whole number, got %s", truncate(string(*sniff.FormatVersion), 40))
	}
	switch {
	case version == FormatVersion:
	case version > FormatVersion:
		return nil, fmt.Errorf("format_version %d is newer than this roofline reads (%d): upgrade roofline, or record the snapshot again with this roofline's `roofline gpu -json`", version, FormatVersion)
	default:
		return nil, fmt.Errorf("format_version %d is not a known GPU snapshot version (this roofline reads %d)", version, FormatVersion)
	}

	// Strict decoding: snapshots are also written by hand for tests and
	// reviews, and a misspelt field must not silently read as zero. (Trailing
	// data was already refused by json.Unmarshal above.)
	var s Snapshot
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s", jsonErr(err, data))
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	s.normalize()
	return &s, nil
}

// check refuses snapshots whose figures cannot come from a real machine.
func (s *Snapshot) check() error {
	if y := s.TakenAt.UTC().Year(); y < 1 || y > 9999 {
		return fmt.Errorf("taken_at %s is out of range", s.TakenAt.Format("2006-01-02T15:04:05Z07:00"))
	}
	seenIndex := map[int]bool{}
	seenUUID := map[string]bool{}
	for _, g := range s.GPUs {
		where := fmt.Sprintf("GPU %d", g.Index)
		switch {
		case g.Index < 0:
			return fmt.Errorf("GPU index %d is negative", g.Index)
		case seenIndex[g.Index]:
			return fmt.Errorf("GPU index %d appears twice", g.Index)
		case g.UUID != "" && seenUUID[g.UUID]:
			return fmt.Errorf("%s: UUID %s appears twice", where, g.UUID)
		case g.MemoryTotalBytes == 0:
			return fmt.Errorf("%s: memory_total_bytes is missing or 0", where)
		case g.MemoryReservedBytes > g.MemoryTotalBytes:
			return fmt.Errorf("%s: memory_reserved_bytes (%d) exceeds memory_total_bytes (%d)", where, g.MemoryReservedBytes, g.MemoryTotalBytes)
		case g.MemoryFreeBytes > g.MemoryTotalBytes-g.MemoryReservedBytes:
			return fmt.Errorf("%s: memory_free_bytes (%d) exceeds total minus reserved (%d)", where, g.MemoryFreeBytes, g.MemoryTotalBytes-g.MemoryReservedBytes)
		case g.MemoryUsedBytes > g.MemoryTotalBytes:
			return fmt.Errorf("%s: memory_used_bytes (%d) exceeds memory_total_bytes (%d)", where, g.MemoryUsedBytes, g.MemoryTotalBytes)
		}
		seenIndex[g.Index] = true
		seenUUID[g.UUID] = true
		for _, p := range g.Processes {
			if p.PID <= 0 {
				return fmt.Errorf("%s: process pid %d is not a valid pid", where, p.PID)
			}
		}
	}
	return nil
}

// WriteSnapshot writes s as indented JSON in the current format, GPUs sorted
// by index and processes by PID, so that equal snapshots are byte-equal. s is
// not modified.
func WriteSnapshot(w io.Writer, s *Snapshot) error {
	if s == nil {
		return errors.New("no snapshot to write")
	}
	c := s.Clone()
	c.FormatVersion = FormatVersion
	c.TakenAt = c.TakenAt.UTC()
	c.normalize()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// jsonErr turns encoding/json errors into messages with a line and column.
func jsonErr(err error, data []byte) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := lineCol(data, syn.Offset)
		return fmt.Sprintf("line %d, column %d: %v", line, col, syn)
	case errors.As(err, &typ):
		line, col := lineCol(data, typ.Offset)
		field := typ.Field
		if field == "" {
			field = "the snapshot"
		}
		return fmt.Sprintf("line %d, column %d: %s must be %s, got JSON %s", line, col, field, typ.Type, typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the file is empty or cut short"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func lineCol(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	line, col = 1, 1
	for _, b := range data[:max(offset, 0)] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
