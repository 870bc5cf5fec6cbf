package state_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/state"
)

// TestDeletedStateWithBackupSaysSo: a deleted state.json whose backup is
// still there is an error naming the backup and the cp that restores it,
// not an empty state (which would call the running engines foreign).
func TestDeletedStateWithBackupSaysSo(t *testing.T) {
	fs := state.NewFilesystem(t.TempDir())
	f := state.NewFile()
	for i := 0; i < 2; i++ { // the second write leaves a backup
		f.Set(&state.Server{Name: "a", Status: state.StatusReady, Port: 8000 + i, Instance: state.Instance{Driver: state.DriverProcess}})
		if err := fs.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(fs.StatePath())
	_, err := fs.Read()
	var me *state.MissingStateError
	if !errors.As(err, &me) || me.Servers != 1 || !strings.Contains(err.Error(), "cp -p "+fs.BackupPath()+" "+fs.StatePath()) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(fs.BackupPath()); err != nil {
		t.Fatal("the backup must be left alone")
	}
	// Without a backup, a missing state is a first run.
	os.Remove(fs.BackupPath())
	if st, err := fs.Read(); err != nil || len(st.Servers) != 0 {
		t.Fatalf("first run: %v %v", st, err)
	}
}
