package cli

// Placeholders for commands that are designed but not built yet: help lists
// them as planned and running one says so. A file that implements a command
// registers it for real, which replaces the placeholder.
func init() {
	for _, c := range []struct{ name, synopsis string }{
		{"init", "Prepare a configuration directory: state dir, engine probes"},
		{"validate", "Check the configuration files"},
		{"fmt", "Rewrite configuration files to the canonical format"},
		{"plan", "Show what apply would change, with every pre-launch check"},
		{"apply", "Start, replace and stop servers to match the configuration"},
		{"destroy", "Stop every server roofline manages"},
		{"show", "Show a saved plan or the state"},
		{"status", "Show the servers that run, their health and footprint"},
		{"state list", "List the servers in the state"},
		{"state show", "Show one server in the state"},
		{"state rm", "Forget a server without stopping it"},
		{"force-unlock", "Release a stuck state lock"},
		{"logs", "Show a server's log"},
		{"diagnose", "Name the cause of a failed start from its log"},
		{"gpu", "Show the GPUs, their free memory and foreign processes"},
		{"vram", "Compute whether a model fits, as the engine will"},
		{"flags", "List the flags of an installed engine"},
		{"model verify", "Verify a model folder against its checksums"},
		{"model manifest", "Write sha256 checksums of a model folder"},
		{"health", "Check a server beyond /health"},
		{"smoke", "Run the tool-call smoke test against a server"},
		{"bench", "Benchmark a server"},
		{"journal", "Show the journal of rollouts and benchmarks"},
	} {
		register(&Command{Name: c.name, Synopsis: c.synopsis, Planned: true,
			Usage: "Usage: roofline " + c.name + "\n\n  Planned: not built yet.\n"})
	}
}
