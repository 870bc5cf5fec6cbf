// Command roofline declares, plans and applies vLLM and SGLang inference servers.
package main

import (
	"os"

	"github.com/roofline/roofline/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.StdStreams()))
}
