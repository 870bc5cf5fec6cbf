package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/roofline/roofline/internal/fsx"
	"github.com/roofline/roofline/internal/version"
)

// maxStateSize bounds what Read loads: a state is a few KiB per server, so a
// file this big is not a state (and must not exhaust memory).
const maxStateSize = 64 << 20

// Read reads the state file at path.
//
// A missing file is not an error: Read returns NewFile(), an empty state with
// Serial 0 and no lineage, which is what a plan made before the first apply
// records. A file that exists but cannot be decoded is a *CorruptError naming
// the backup and how to restore it; a file from a newer roofline is a
// *VersionError. Read never replaces a bad file with an empty state.
func Read(path string) (*File, error) {
	data, err := readLimited(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := missingWithBackup(path); err != nil {
			return nil, err
		}
		return NewFile(), nil
	}
	if errors.Is(err, fsx.ErrSymlink) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the state file: %w; check that it is readable by the user running roofline", err)
	}
	f, err := Decode(data)
	if err != nil {
		var ve *VersionError
		if errors.As(err, &ve) {
			ve.Path = path
			return nil, ve
		}
		return nil, newCorruptError(path, err)
	}
	return f, nil
}

// readLimited reads a state or backup file: never through a symlink, never
// a device or FIFO, never more than maxStateSize.
func readLimited(path string) ([]byte, error) {
	data, err := fsx.ReadFileNoFollow(path, maxStateSize)
	switch {
	case errors.Is(err, fsx.ErrSymlink):
		if lerr := refuseLink(path, "state file"); lerr != nil {
			return nil, lerr
		}
	case errors.Is(err, fsx.ErrTooLarge):
		return nil, fmt.Errorf("%s is over %d MiB, far more than any state; it is not a roofline state file", path, maxStateSize>>20)
	}
	return data, err
}

// Decode parses a state from its JSON. It reads format_version first and
// only then decodes the rest with the reader for that version (format 1 is
// upgraded to the current one); unknown fields, trailing data and inconsistent records
// are errors, never silently dropped. (Trailing data is caught by the sniff,
// which parses the whole input.)
func Decode(data []byte) (*File, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, errors.New("the file is not a JSON object")
		}
		return nil, jsonError(data, err)
	}
	raw, ok := top["format_version"]
	if !ok {
		return nil, errors.New(`it has no "format_version": this is not a roofline state file`)
	}
	var v int64
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("format_version %s is not a whole number", truncate(string(raw), 40))
	}
	switch {
	case v > CurrentFormat:
		var writtenBy string
		_ = json.Unmarshal(top["roofline_version"], &writtenBy)
		return nil, &VersionError{Found: v, WrittenBy: writtenBy}
	case v < 1:
		return nil, fmt.Errorf("format_version %d is not a valid version", v)
	}
	var f *File
	var err error
	if v == 1 {
		f, err = decodeV1(data)
	} else {
		f, err = decodeCurrent(data)
	}
	if err != nil {
		return nil, err
	}
	if v == 2 {
		f.FormatVersion = CurrentFormat // format 3 only added fields
	}
	if f.Servers == nil {
		f.Servers = map[string]*Server{}
	}
	if err := validate(f); err != nil {
		return nil, err
	}
	return f, nil
}

func decodeCurrent(data []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, jsonError(data, err)
	}
	return &f, nil
}

// jsonError makes a decoder error readable: position as line and column,
// and a hint for the usual causes.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var pe *time.ParseError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || err.Error() == "unexpected end of JSON input":
		return errors.New("the file ends in the middle of the JSON (truncated)")
	case errors.As(err, &se):
		// Offset is just past the offending byte.
		line, col := position(data, se.Offset-1)
		return fmt.Errorf("line %d, column %d: %s", line, col, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te):
		line, col := position(data, te.Offset)
		field := te.Field
		if field == "" {
			field = "a value"
		}
		return fmt.Errorf("line %d, column %d: %s cannot hold %s (it must be %s)", line, col, field, te.Value, te.Type)
	case errors.As(err, &pe):
		return fmt.Errorf("time %q is not in RFC 3339 form (2006-01-02T15:04:05Z)", pe.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return fmt.Errorf("%s: not part of state format_version %d (a typo in a hand edit?)", strings.TrimPrefix(err.Error(), "json: "), CurrentFormat)
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// validate checks what the JSON decoder cannot: records that contradict
// each other or values no roofline writes.
func validate(f *File) error {
	if f.FormatVersion != CurrentFormat {
		return fmt.Errorf("format_version is %d; this roofline writes %d", f.FormatVersion, CurrentFormat)
	}
	if f.Lineage == "" {
		return errors.New(`"lineage" is empty; every written state has one`)
	}
	for _, name := range f.Names() {
		s := f.Servers[name]
		where := fmt.Sprintf("servers[%q]", name)
		switch {
		case name == "":
			return errors.New(`a server has an empty name ("servers" key "")`)
		case s == nil:
			return fmt.Errorf("%s is null", where)
		case s.Name != name:
			return fmt.Errorf("%s has name %q; the key and the name must be the same", where, s.Name)
		}
		if err := validateServer(s, where); err != nil {
			return err
		}
		if d := s.Deposed; d != nil {
			switch {
			case d.Deposed != nil:
				return fmt.Errorf("%s.deposed has a deposed instance of its own; only one old instance is kept", where)
			case d.Name != name:
				return fmt.Errorf("%s.deposed has name %q; a deposed instance keeps its server's name", where, d.Name)
			}
			if err := validateServer(d, where+".deposed"); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateServer(s *Server, where string) error {
	switch {
	case s.Port < 0 || s.Port > 65535:
		return fmt.Errorf("%s: port %d is not a TCP port", where, s.Port)
	case s.BackendPort < 0 || s.BackendPort > 65535:
		return fmt.Errorf("%s: backend_port %d is not a TCP port", where, s.BackendPort)
	case s.CommandLen < 0:
		return fmt.Errorf("%s: command_len %d is negative", where, s.CommandLen)
	case !knownStatus[s.Status]:
		return fmt.Errorf("%s: status %q is not one of starting, ready, failed, stopping, kept", where, s.Status)
	case s.Driver == "":
		return fmt.Errorf("%s: driver is empty", where)
	}
	if err := validateInstance(&s.Instance, where+".instance"); err != nil {
		return err
	}
	if s.Proxy != nil {
		if err := validateInstance(s.Proxy, where+".proxy"); err != nil {
			return err
		}
	}
	for _, g := range s.GPUs {
		if g < 0 {
			return fmt.Errorf("%s: GPU index %d is negative", where, g)
		}
	}
	return nil
}

// VersionError is the error for a state written in a format newer than this
// roofline reads.
type VersionError struct {
	Path      string
	Found     int64  // the file's format_version
	WrittenBy string // the file's roofline_version, "" if unreadable
}

func (e *VersionError) Error() string {
	by := "a newer roofline"
	if e.WrittenBy != "" {
		by = "roofline " + e.WrittenBy
	}
	return fmt.Sprintf("state written by a newer roofline: %s has format_version %d (written by %s); this roofline (%s) reads format_version %d.\n"+
		"Upgrade roofline to use this state. Do not edit the file or restore an older backup: "+
		"the older state would not know the servers started since.",
		e.Path, e.Found, by, version.Version, CurrentFormat)
}

// CorruptError is the error for a state file that exists but cannot be
// decoded. Its message names the backup and says how to restore it.
type CorruptError struct {
	Path   string // the state file
	Backup string // its backup (BackupPath(Path))
	// BackupSerial is the backup's serial when the backup itself reads
	// cleanly; BackupErr says why not otherwise (fs.ErrNotExist when absent).
	BackupSerial uint64
	BackupErr    error
	Err          error // what is wrong with the state file
}

func newCorruptError(path string, err error) *CorruptError {
	e := &CorruptError{Path: path, Backup: BackupPath(path), Err: err}
	data, berr := readLimited(e.Backup)
	if berr == nil {
		var b *File
		if b, berr = Decode(data); berr == nil {
			e.BackupSerial = b.Serial
		}
	}
	e.BackupErr = berr
	return e
}

func (e *CorruptError) Unwrap() error { return e.Err }

func (e *CorruptError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the state file %s is corrupt: %v. roofline changed nothing.\n", e.Path, e.Err)
	switch {
	case e.BackupErr == nil:
		fmt.Fprintf(&b, "The previous state (serial %d) is in %s. To restore it:\n  cp %s %s\n"+
			"then run \"roofline plan\" to compare it with what runs: it may miss the last change.",
			e.BackupSerial, e.Backup, shellQuote(e.Backup), shellQuote(e.Path))
	case errors.Is(e.BackupErr, fs.ErrNotExist):
		fmt.Fprintf(&b, "There is no backup (%s does not exist). Repair the file by hand (docs/state.md describes the format), "+
			"or move it away to start from an empty state; roofline then forgets the servers it started, so stop them yourself first.",
			e.Backup)
	default:
		fmt.Fprintf(&b, "The backup %s cannot be used either: %v. Repair one of them by hand (docs/state.md describes the format).",
			e.Backup, e.BackupErr)
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// MissingStateError is a state file that is gone while its backup is still
// there: engines recorded in it may run, and starting from an empty state
// would report them as "processes roofline did not start" and start
// duplicates. Restoring the backup is one cp away.
type MissingStateError struct {
	Path, Backup string
	Servers      int
	Serial       uint64
}

func (e *MissingStateError) Error() string {
	return fmt.Sprintf("the state file %s is missing, but its backup %s is there (serial %d, %d server(s)): the engines it records may still run, "+
		"and roofline will not start over from an empty state. Restore it with:\n  cp -p %s %s\n"+
		"then run roofline plan (refresh finds what still runs). To start from nothing on purpose, remove the backup too",
		e.Path, e.Backup, e.Serial, e.Servers, e.Backup, e.Path)
}

func missingWithBackup(path string) error {
	backup := BackupPath(path)
	data, err := readLimited(backup)
	if err != nil {
		return nil // no backup (or unreadable): a first run
	}
	f, err := Decode(data)
	if err != nil {
		return &MissingStateError{Path: path, Backup: backup}
	}
	return &MissingStateError{Path: path, Backup: backup, Servers: len(f.Servers), Serial: f.Serial}
}
