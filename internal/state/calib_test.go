package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCalibrations(t *testing.T) {
	dir := t.TempDir()
	cs, err := ReadCalibrations(dir)
	if err != nil || len(cs.Records) != 0 || cs.Exact(CalibrationKey{}) != nil {
		t.Fatalf("missing file: %+v %v", cs, err)
	}
	k := CalibrationKey{Engine: "vllm", EngineIdentity: "id1", GPU: "H100", ModelFingerprint: "m", TP: 1, PP: 1, MaxModelLen: 8192}
	other := k
	other.MaxModelLen = 4096
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, c := range []Calibration{
		{Key: k, Arch: "Qwen3ForCausalLM", Server: "a", At: at, KVBudgetBytes: 90, PredictedKVBudgetBytes: 100, KVTokens: 1},
		{Key: other, Arch: "Qwen3ForCausalLM", Server: "b", At: at.Add(time.Hour), KVBudgetBytes: 110, PredictedKVBudgetBytes: 100, KVTokens: 2},
		{Key: k, Arch: "Qwen3ForCausalLM", Server: "a", At: at.Add(2 * time.Hour), KVBudgetBytes: 95, PredictedKVBudgetBytes: 100, KVTokens: 3},
	} {
		if err := RecordCalibration(dir, c); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	cs, err = ReadCalibrations(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Records) != 2 {
		t.Fatalf("a record replaces the one with its key: %d records", len(cs.Records))
	}
	if e := cs.Exact(k); e == nil || e.KVTokens != 3 || e.Residual() != -0.05 {
		t.Errorf("exact: %+v", e)
	}
	fam := k
	fam.MaxModelLen, fam.ModelFingerprint = 1024, "other model"
	if f := cs.Family(fam, "Qwen3ForCausalLM"); f == nil || f.KVTokens != 3 {
		t.Errorf("family: newest of the family, got %+v", f)
	}
	fam.EngineIdentity = "id2"
	if f := cs.Family(fam, "Qwen3ForCausalLM"); f != nil {
		t.Errorf("another engine install is another family: %+v", f)
	}
	if f := cs.Family(k, "LlamaForCausalLM"); f != nil {
		t.Errorf("another architecture is another family: %+v", f)
	}
	if l := cs.Latest("b"); l == nil || l.KVTokens != 2 {
		t.Errorf("latest of b: %+v", l)
	}
	// The file is the user's only, and bounded.
	if fi, err := os.Stat(filepath.Join(dir, CalibrationsFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v %v", fi.Mode(), err)
	}
	for i := range maxCalibrations + 10 {
		kk := k
		kk.MaxModelLen = 100000 + i
		if err := RecordCalibration(dir, Calibration{Key: kk, KVTokens: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	cs, _ = ReadCalibrations(dir)
	if len(cs.Records) != maxCalibrations || cs.Records[len(cs.Records)-1].KVTokens != maxCalibrations+9 {
		t.Errorf("bound: %d records", len(cs.Records))
	}
	// A damaged file is an error to read (naming the fix) and is replaced
	// by the next record.
	_ = os.WriteFile(filepath.Join(dir, CalibrationsFile), []byte("{"), 0o600)
	if _, err := ReadCalibrations(dir); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("damaged: %v", err)
	}
	if err := RecordCalibration(dir, Calibration{Key: k, KVTokens: 7}); err != nil {
		t.Fatal(err)
	}
	if cs, err := ReadCalibrations(dir); err != nil || len(cs.Records) != 1 {
		t.Errorf("after a damaged file: %+v %v", cs, err)
	}
	// A symlinked file is refused.
	link := t.TempDir()
	_ = os.Symlink(filepath.Join(dir, CalibrationsFile), filepath.Join(link, CalibrationsFile))
	if _, err := ReadCalibrations(link); err == nil {
		t.Error("read through a symlink")
	}
	if err := RecordCalibration(link, Calibration{Key: k}); err == nil {
		t.Error("wrote through a symlink")
	}
}
