package logdiag_test

import (
	"io"

	"github.com/roofline/roofline/internal/engine"
	"github.com/roofline/roofline/internal/engine/logdiag"
)

// The tests of this package classify real vLLM and SGLang logs, whose rules
// belong to the engine kinds (engine/vllm_log.go, engine/sglang_log.go): they
// run the classifier of every kind, the one `roofline diagnose` uses for a
// log without a state record (engine.LogsOf("")). engine's TestKindLogs
// checks that each kind's own classifier says the same of its logs. The
// names below keep the tests' text as it was when the rules lived here.
var every = engine.LogsOf("")

func Classify(log []byte) Diagnosis                          { return every.Classify(log) }
func ClassifyReader(r io.Reader) (Diagnosis, error)          { return every.ClassifyReader(r) }
func ClassifyFile(p string, in io.Reader) (Diagnosis, error) { return every.ClassifyFile(p, in) }
func ParseFootprint(log []byte) *Footprint                   { return every.Footprint(log) }

type (
	Diagnosis = logdiag.Diagnosis
	Footprint = logdiag.Footprint
)

var (
	Classes   = logdiag.Classes
	Info      = logdiag.Info
	stripANSI = logdiag.StripANSI
)

const (
	TailBytes   = logdiag.TailBytes
	maxEvidence = logdiag.MaxEvidence

	OOMWeights        = logdiag.OOMWeights
	KVTooSmall        = logdiag.KVTooSmall
	NoKVMemory        = logdiag.NoKVMemory
	FreeMemBelowUtil  = logdiag.FreeMemBelowUtil
	PortInUse         = logdiag.PortInUse
	MissingFiles      = logdiag.MissingFiles
	UnsupportedArch   = logdiag.UnsupportedArch
	DriverMismatch    = logdiag.DriverMismatch
	NCCLError         = logdiag.NCCLError
	BadFlag           = logdiag.BadFlag
	OOMCUDAGraph      = logdiag.OOMCUDAGraph
	SGLangMemFraction = logdiag.SGLangMemFraction
	Unknown           = logdiag.Unknown
)
