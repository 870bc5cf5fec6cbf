package state_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/state"
)

var update = flag.Bool("update", false, "rewrite golden files")

// helperEnv makes the test binary act as a second roofline process that
// takes the state lock in the directory it names (see TestMain).
const helperEnv = "ROOFLINE_STATE_LOCK_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(lockHelper(dir))
	}
	os.Exit(m.Run())
}

// lockHelper takes the lock, says so on stdout, holds it until stdin closes,
// then unlocks. Tests kill it to play a roofline that dies holding the lock.
func lockHelper(dir string) int {
	fs := state.NewFilesystem(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := fs.Lock(ctx, state.NewLockInfo("apply"))
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("locked", id)
	bufio.NewReader(os.Stdin).ReadString('\n')
	if err := fs.Unlock(id); err != nil {
		fmt.Println("unlock error", err)
		return 1
	}
	return 0
}
