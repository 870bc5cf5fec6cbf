package plan

import (
	"encoding/json"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/diagfmt"
	"github.com/roofline/roofline/internal/journal"
	"github.com/roofline/roofline/internal/jsonplan"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/vram"
)

// Document converts the plan's JSON form, already masked (ToJSON), into the
// plan document (internal/jsonplan): what plan -json and show -json print.
// Each field is copied by name, so that a change to an internal record
// reaches the document only through this file (and a format_version bump).
func Document(j *JSONPlan) *jsonplan.Plan {
	if j == nil {
		return nil
	}
	d := &jsonplan.Plan{
		FormatVersion:        jsonplan.FormatVersion,
		RooflineVersion:      j.RooflineVersion,
		CreatedAt:            j.CreatedAt,
		Mode:                 string(j.Mode),
		Review:               j.Review,
		ConfigDir:            j.ConfigDir,
		Lineage:              j.Lineage,
		PriorSerial:          j.PriorSerial,
		InventoryFingerprint: j.InventoryFingerprint,
		InventorySource:      j.InventorySource,
		SnapshotHost:         j.SnapshotHost,
		SnapshotCreatedAt:    j.SnapshotCreatedAt,
		Installs:             j.Installs,
		Models:               j.Models,
		Targets:              j.Targets,
		ResourceChanges:      []jsonplan.ResourceChange{},
		ResourceDrift:        []jsonplan.Drift{},
		Diagnostics:          []jsonplan.Diagnostic{},
		Applyable:            j.Applyable,
		Errored:              j.Errored,
		Summary:              jsonplan.Summary{Add: j.Summary["add"], Change: j.Summary["change"], Destroy: j.Summary["destroy"]},
	}
	for _, c := range j.ResourceChanges {
		d.ResourceChanges = append(d.ResourceChanges, jsonplan.ResourceChange{
			Address:         c.Address,
			PreviousAddress: c.PreviousAddress,
			Importing:       convImporting(c.Importing),
			Type:            c.Type,
			Name:            c.Name,
			Actions:         c.Actions,
			Reason:          c.Reason,
			ReplacePaths:    c.ReplacePaths,
			Downtime:        c.Downtime,
			Before:          convStateServer(c.Before),
			After:           convPlannedServer(c.After),
			BeforeSensitive: convSensitive(c.BeforeSensitive),
			AfterSensitive:  convSensitive(c.AfterSensitive),
			VRAM:            convVRAM(c.VRAM),
			Measured:        convFootprint(c.Measured),
			LastBench:       convJournalEntry(c.LastBench),
			EnvChanges:      convSlice(c.EnvChanges, func(x EnvChange) jsonplan.EnvChange { return *convEnvChange(&x) }),
			ModelFiles:      c.ModelFiles,
			DefaultChanges:  convSlice(c.DefaultChanges, func(x DefaultChange) jsonplan.DefaultChange { return *convDefaultChange(&x) }),
			KeptInstance:    convKept(c.KeptInstance),
		})
	}
	for _, dr := range j.ResourceDrift {
		if dr != nil {
			d.ResourceDrift = append(d.ResourceDrift, *convDrift(dr))
		}
	}
	for _, dg := range j.Diagnostics {
		d.Diagnostics = append(d.Diagnostics, *convDiagnostic(&dg))
	}
	return d
}

// VRAMDocument converts a memory-model result into the plan document's
// type (for vram -json, which prints the same object).
func VRAMDocument(r *vram.Result) *jsonplan.VRAM { return convVRAM(r) }

// StateServerDocument converts a state record into the plan document's
// type for it (state show -json and show -json print the same object).
func StateServerDocument(s *state.Server) *jsonplan.StateServer { return convStateServer(s) }

// JournalEntryDocument converts a journal entry into the plan document's
// type for it (journal -json prints the same object).
func JournalEntryDocument(e *journal.Entry) *jsonplan.JournalEntry { return convJournalEntry(e) }

// convSensitive turns sensitiveMarks' map ("argv": []bool, "env":
// map[string]bool) into the document's type.
func convSensitive(m map[string]any) *jsonplan.Sensitive {
	if m == nil {
		return nil
	}
	s := &jsonplan.Sensitive{}
	s.Argv, _ = m["argv"].([]bool)
	s.Env, _ = m["env"].(map[string]bool)
	return s
}

func convSlice[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, x := range in {
		out[i] = f(x)
	}
	return out
}

func convStateServer(in *state.Server) *jsonplan.StateServer {
	if in == nil {
		return nil
	}
	return &jsonplan.StateServer{
		Name:        in.Name,
		Engine:      *convEngineRef(&in.Engine),
		Model:       *convModelRef(&in.Model),
		Argv:        in.Argv,
		Env:         in.Env,
		Sensitive:   in.Sensitive,
		APIKeyHash:  in.APIKeyHash,
		CommandLen:  in.CommandLen,
		GPUs:        in.GPUs,
		Host:        in.Host,
		Port:        in.Port,
		Image:       in.Image,
		Instance:    *convInstance(&in.Instance),
		Status:      in.Status,
		CreatedAt:   in.CreatedAt,
		ReadyAt:     in.ReadyAt,
		ConfigHash:  in.ConfigHash,
		GateHash:    in.GateHash,
		BackendPort: in.BackendPort,
		Proxy:       convInstance(in.Proxy),
		Deposed:     convStateServer(in.Deposed),
		Gate:        convGateResult(in.Gate),
		Footprint:   convFootprint(in.Footprint),
		Predicted:   convFootprint(in.Predicted),
		ClaimBytes:  in.ClaimBytes,
		ProxyLimits: convProxyLimits(in.ProxyLimits),
	}
}

func convProxyLimits(in *state.ProxyLimits) *jsonplan.ProxyLimits {
	if in == nil {
		return nil
	}
	return &jsonplan.ProxyLimits{MaxBody: in.MaxBody, MaxBuffered: in.MaxBuffered, MaxConnections: in.MaxConnections,
		HeaderTimeout: in.HeaderTimeout, BodyTimeout: in.BodyTimeout, IdleTimeout: in.IdleTimeout}
}

func convKept(in *KeptInstance) *jsonplan.KeptInstance {
	if in == nil {
		return nil
	}
	return &jsonplan.KeptInstance{PID: in.PID, Engine: *convEngineRef(&in.Engine), GPUs: in.GPUs, Until: in.Until,
		MemoryBytes: in.MemoryBytes, MemorySource: in.MemorySource, Gone: in.Gone, Detail: in.Detail, Stop: in.Stop}
}

func convInstance(in *state.Instance) *jsonplan.Instance {
	if in == nil {
		return nil
	}
	return &jsonplan.Instance{
		Driver:    in.Driver,
		ID:        in.ID,
		Name:      in.Name,
		PID:       in.PID,
		Group:     in.Group,
		StartTime: in.StartTime,
		BootID:    in.BootID,
		Cmdline:   in.Cmdline,
		LaunchID:  in.LaunchID,
		LogPath:   in.LogPath,
	}
}

func convEngineRef(in *state.EngineRef) *jsonplan.EngineRef {
	if in == nil {
		return nil
	}
	return &jsonplan.EngineRef{
		Name:     in.Name,
		Kind:     in.Kind,
		Version:  in.Version,
		Identity: in.Identity,
	}
}

func convModelRef(in *state.ModelRef) *jsonplan.ModelRef {
	if in == nil {
		return nil
	}
	return &jsonplan.ModelRef{
		Name:        in.Name,
		Path:        in.Path,
		ServedName:  in.ServedName,
		Fingerprint: in.Fingerprint,
		Files:       in.Files,
	}
}

func convGateResult(in *state.GateResult) *jsonplan.GateResult {
	if in == nil {
		return nil
	}
	out := &jsonplan.GateResult{Passed: in.Passed, CheckedAt: in.CheckedAt}
	out.Health, out.Smoke, out.Bench = GateReports(in.Health, in.Smoke, in.Bench)
	return out
}

// GateReports reads the gates' reports as the state records them (JSON,
// written by internal/gate) into the document's types: a field the gate
// adds reaches the document only when jsonplan declares it. A report that
// is missing, null or unreadable is absent.
func GateReports(health, smoke, bench json.RawMessage) (*jsonplan.HealthReport, *jsonplan.SmokeReport, *jsonplan.BenchResult) {
	return decodeReport[jsonplan.HealthReport](health), decodeReport[jsonplan.SmokeReport](smoke),
		decodeReport[journal.BenchSummary](bench).Document()
}

// decodeReport decodes one gate's report; nil when there is none.
func decodeReport[T any](raw json.RawMessage) *T {
	var v *T
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

func convFootprint(in *state.Footprint) *jsonplan.Footprint {
	if in == nil {
		return nil
	}
	return &jsonplan.Footprint{
		WeightsGiB:     in.WeightsGiB,
		KVCacheGiB:     in.KVCacheGiB,
		KVTokens:       in.KVTokens,
		MaxConcurrency: in.MaxConcurrency,
	}
}

func convCalibrationKey(in *state.CalibrationKey) *jsonplan.CalibrationKey {
	if in == nil {
		return nil
	}
	return &jsonplan.CalibrationKey{
		Engine:              in.Engine,
		EngineIdentity:      in.EngineIdentity,
		GPU:                 in.GPU,
		GPUMemoryBytes:      in.GPUMemoryBytes,
		ModelFingerprint:    in.ModelFingerprint,
		TP:                  in.TP,
		PP:                  in.PP,
		DtypeBytes:          in.DtypeBytes,
		KVCacheDtype:        in.KVCacheDtype,
		MaxModelLen:         in.MaxModelLen,
		MaxNumSeqs:          in.MaxNumSeqs,
		MaxNumBatchedTokens: in.MaxNumBatchedTokens,
		BlockSize:           in.BlockSize,
		Utilization:         in.Utilization,
		EnforceEager:        in.EnforceEager,
	}
}

func convPlannedServer(in *Desired) *jsonplan.PlannedServer {
	if in == nil {
		return nil
	}
	return &jsonplan.PlannedServer{
		Name:            in.Name,
		Engine:          *convEngineRef(&in.Engine),
		Model:           *convModelRef(&in.Model),
		Argv:            in.Argv,
		CommandLen:      in.CommandLen,
		Env:             in.Env,
		Sensitive:       in.Sensitive,
		EnvFrom:         in.EnvFrom,
		GPUs:            in.GPUs,
		Host:            in.Host,
		Port:            in.Port,
		Driver:          in.Driver,
		Image:           in.Image,
		ConfigHash:      in.ConfigHash,
		GateHash:        in.GateHash,
		Gate:            convGateSpec(in.Gate),
		Predicted:       convFootprint(in.Predicted),
		AutoMaxModelLen: in.AutoMaxModelLen,
		Calibration:     convCalibration(in.Calibration),
		Proxy:           in.Proxy,
		Keyed:           in.Keyed,
		APIKeyFile:      in.APIKeyFile,
		DrainTimeout:    in.DrainTimeout,
		KeepPrevious:    in.KeepPrevious,
		ProxyLimits:     convProxyLimits(in.ProxyLimits),
		BackendPorts:    in.BackendPorts,
		Sources:         in.Sources,
		ClaimBytes:      in.ClaimBytes,
	}
}

func convGateSpec(in *GateSpec) *jsonplan.GateSpec {
	if in == nil {
		return nil
	}
	return &jsonplan.GateSpec{
		HealthTimeout: in.HealthTimeout,
		SmokeToolcall: in.SmokeToolcall,
		Reasoning:     in.Reasoning,
		Bench:         convBenchGate(in.Bench),
	}
}

func convBenchGate(in *config.Bench) *jsonplan.BenchGate {
	if in == nil {
		return nil
	}
	return &jsonplan.BenchGate{
		Concurrency:              in.Concurrency,
		RequestRate:              in.RequestRate,
		Requests:                 in.Requests,
		InputTokens:              in.InputTokens,
		OutputTokens:             in.OutputTokens,
		MinOutputTokensPerSecond: in.MinOutputTokensPerSecond,
		MinRequestsPerSecond:     in.MinRequestsPerSecond,
		MaxTTFTP99:               in.MaxTTFTP99,
		MaxTPOTP99:               in.MaxTPOTP99,
		MaxITLP99:                in.MaxITLP99,
		MaxFailedRequests:        in.MaxFailedRequests,
	}
}

func convCalibration(in *Calibration) *jsonplan.Calibration {
	if in == nil {
		return nil
	}
	return &jsonplan.Calibration{
		Status:            in.Status,
		Key:               *convCalibrationKey(&in.Key),
		Arch:              in.Arch,
		Residual:          in.Residual,
		FromServer:        in.FromServer,
		FromTime:          in.FromTime,
		RequestedBytes:    in.RequestedBytes,
		BareWeightsBytes:  in.BareWeightsBytes,
		BareOverheadBytes: in.BareOverheadBytes,
		BareKVBudgetBytes: in.BareKVBudgetBytes,
		BareKVTokens:      in.BareKVTokens,
		PickedMaxModelLen: in.PickedMaxModelLen,
	}
}

func convImporting(in *ImportInfo) *jsonplan.Importing {
	if in == nil {
		return nil
	}
	return &jsonplan.Importing{
		ID:          in.ID,
		PID:         in.PID,
		Uptime:      in.Uptime,
		OwnGroup:    in.OwnGroup,
		Differences: in.Differences,
	}
}

func convEnvChange(in *EnvChange) *jsonplan.EnvChange {
	if in == nil {
		return nil
	}
	return &jsonplan.EnvChange{
		Key:       in.Key,
		Action:    in.Action,
		Before:    in.Before,
		After:     in.After,
		Sensitive: in.Sensitive,
	}
}

func convDefaultChange(in *DefaultChange) *jsonplan.DefaultChange {
	if in == nil {
		return nil
	}
	return &jsonplan.DefaultChange{
		Setting: in.Setting,
		Before:  in.Before,
		After:   in.After,
		Source:  in.Source,
		Memory:  in.Memory,
	}
}

func convDrift(in *Drift) *jsonplan.Drift {
	if in == nil {
		return nil
	}
	return &jsonplan.Drift{
		Addr:    in.Addr,
		Summary: in.Summary,
		Detail:  in.Detail,
	}
}

func convVRAM(in *vram.Result) *jsonplan.VRAM {
	if in == nil {
		return nil
	}
	return &jsonplan.VRAM{
		Engine:               in.Engine,
		EngineVersion:        in.EngineVersion,
		Mode:                 in.Mode,
		Fits:                 in.Fits,
		Reasons:              in.Reasons,
		Warnings:             in.Warnings,
		Suggestions:          in.Suggestions,
		Ranks:                convSlice(in.Ranks, func(x vram.Rank) jsonplan.VRAMRank { return *convVRAMRank(&x) }),
		KVTokens:             in.KVTokens,
		KVBudgetBytes:        in.KVBudgetBytes,
		WeightsBytes:         in.WeightsBytes,
		KVBytesPerToken:      in.KVBytesPerToken,
		NeededBytes:          in.NeededBytes,
		MaxConcurrency:       in.MaxConcurrency,
		MaxModelLenFit:       in.MaxModelLenFit,
		MinTPFit:             in.MinTPFit,
		RequestedBytes:       in.RequestedBytes,
		TP:                   in.TP,
		PP:                   in.PP,
		MaxModelLen:          in.MaxModelLen,
		GPUMemoryBytes:       in.GPUMemoryBytes,
		GPUMemoryUtilization: in.GPUMemoryUtilization,
		KVCacheDtype:         in.KVCacheDtype,
		BlockSize:            in.BlockSize,
		MaxNumSeqs:           in.MaxNumSeqs,
		MaxNumBatchedTokens:  in.MaxNumBatchedTokens,
		Concurrency:          in.Concurrency,
	}
}

func convVRAMRank(in *vram.Rank) *jsonplan.VRAMRank {
	if in == nil {
		return nil
	}
	return &jsonplan.VRAMRank{
		Rank:              in.Rank,
		PPStage:           in.PPStage,
		TPRank:            in.TPRank,
		Layers:            in.Layers,
		FreeBytes:         in.FreeBytes,
		RequestedBytes:    in.RequestedBytes,
		WeightsBytes:      in.WeightsBytes,
		ActivationBytes:   in.ActivationBytes,
		NonTorchBytes:     in.NonTorchBytes,
		CUDAGraphBytes:    in.CUDAGraphBytes,
		CUDAGraphDeducted: in.CUDAGraphDeducted,
		KVBudgetBytes:     in.KVBudgetBytes,
		KVBytesPerToken:   in.KVBytesPerToken,
		NumBlocks:         in.NumBlocks,
		KVTokens:          in.KVTokens,
		NeededBytes:       in.NeededBytes,
		Concurrency:       in.Concurrency,
		Measured:          in.Measured,
	}
}

func convJournalEntry(in *journal.Entry) *jsonplan.JournalEntry {
	if in == nil {
		return nil
	}
	return &jsonplan.JournalEntry{
		Time:          in.Time,
		Kind:          in.Kind,
		Server:        in.Server,
		From:          in.From,
		URL:           in.URL,
		Engine:        *convJournalEngine(&in.Engine),
		Model:         *convJournalModel(&in.Model),
		GPUs:          in.GPUs,
		DriverVersion: in.DriverVersion,
		CUDAVersion:   in.CUDAVersion,
		Argv:          in.Argv,
		Gate:          convJournalGate(in.Gate),
		Failure:       convJournalFailure(in.Failure),
		Bench:         in.Bench.Document(),
		Agent:         convAgentEvent(in.Agent),
	}
}

func convJournalEngine(in *journal.EngineInfo) *jsonplan.JournalEngine {
	if in == nil {
		return nil
	}
	return &jsonplan.JournalEngine{
		Kind:     in.Kind,
		Version:  in.Version,
		Identity: in.Identity,
	}
}

func convJournalModel(in *journal.ModelInfo) *jsonplan.JournalModel {
	if in == nil {
		return nil
	}
	return &jsonplan.JournalModel{
		Name:        in.Name,
		Path:        in.Path,
		Fingerprint: in.Fingerprint,
	}
}

func convJournalGate(in *journal.GateSummary) *jsonplan.JournalGate {
	if in == nil {
		return nil
	}
	return &jsonplan.JournalGate{
		Passed:   in.Passed,
		Health:   in.Health,
		Smoke:    in.Smoke,
		Bench:    in.Bench,
		Failures: in.Failures,
	}
}

func convJournalFailure(in *journal.Failure) *jsonplan.JournalFailure {
	if in == nil {
		return nil
	}
	return &jsonplan.JournalFailure{
		Phase:   in.Phase,
		Class:   in.Class,
		Error:   in.Error,
		KeptOld: in.KeptOld,
	}
}

func convAgentEvent(in *journal.AgentEvent) *jsonplan.AgentEvent {
	if in == nil {
		return nil
	}
	return &jsonplan.AgentEvent{
		Action:  in.Action,
		Reason:  in.Reason,
		Attempt: in.Attempt,
		Class:   in.Class,
		Cause:   in.Cause,
		PID:     in.PID,
	}
}

func convDiagnostic(in *diagfmt.Diag) *jsonplan.Diagnostic {
	if in == nil {
		return nil
	}
	return &jsonplan.Diagnostic{
		Severity: in.Severity,
		Summary:  in.Summary,
		Detail:   in.Detail,
		Range:    convRange(in.Range),
		Snippet:  convSnippet(in.Snippet),
	}
}

func convRange(in *diagfmt.Range) *jsonplan.Range {
	if in == nil {
		return nil
	}
	return &jsonplan.Range{
		Filename: in.Filename,
		Start:    *convPos(&in.Start),
		End:      *convPos(&in.End),
	}
}

func convPos(in *diagfmt.Pos) *jsonplan.Pos {
	if in == nil {
		return nil
	}
	return &jsonplan.Pos{
		Line:   in.Line,
		Column: in.Column,
		Byte:   in.Byte,
	}
}

func convSnippet(in *diagfmt.Snippet) *jsonplan.Snippet {
	if in == nil {
		return nil
	}
	return &jsonplan.Snippet{
		Code:      in.Code,
		StartLine: in.StartLine,
	}
}
