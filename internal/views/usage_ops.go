package views

// The help texts of the operations commands (agent, check, apply, destroy,
// bench, health, smoke, import, snapshot, state mv, rollback, proxy), as
// usage.go holds the others'.

// UsageAgent is the help text of roofline agent.
const UsageAgent = `Usage: roofline [global options] agent [options]

  Runs in the foreground until SIGTERM or Ctrl-C, for the configuration in
  the current directory (or -chdir). Every tick it observes each server of
  the state (process, /health, and every generate_every a short real
  generation) and starts again one that died, exited or hangs, through the
  same plan, driver and health gate as apply, under the state lock (it
  waits while another roofline holds it). Restarts back off exponentially
  (backoff_initial doubling to backoff_max, reset after reset_after
  healthy); after max_restarts failed restarts in a row it stops trying and
  reports the classified cause. It never applies a new configuration: a
  server whose configuration changed since the last apply is left to
  roofline apply. After a reboot it starts the servers again. What it does
  goes to the journal.

  It serves /metrics (Prometheus), /snapshot (JSON) and /healthz on -listen,
  loopback by default. Bound to another address it requires a bearer token:
  $ROOFLINE_AGENT_TOKEN or the first line of -token-file.

  SIGTERM stops the agent and leaves the servers running. SIGHUP re-reads
  -settings. Under systemd (Type=notify) it reports readiness and feeds the
  watchdog; see docs/agent.md and examples/systemd/.

Options:
  -listen=ADDR          Where to serve /metrics (default 127.0.0.1:9478; "off": none).
  -token-file=FILE      Bearer token for the endpoint (or $ROOFLINE_AGENT_TOKEN).
  -settings=FILE        JSON file of the settings below; re-read on SIGHUP.
  -tick=DUR             How often every server is observed (default 5s).
  -generate-every=DUR   How often a ready server must answer a short generation (default 1m; 0: never).
  -backoff-initial=DUR  Wait after a restart before the next one (default 10s), doubling...
  -backoff-max=DUR      ...up to this (default 5m).
  -reset-after=DUR      Healthy this long resets the backoff and failures (default 10m).
  -max-restarts=N       Failed restarts in a row before giving up (default 5).
  -hang-checks=N        Failed checks in a row that make a running server hung (default 3).
  -var NAME=VALUE       Set a variable block's value (repeatable).
  -var-file=FILE        Read variable values from FILE (repeatable; in order
                        with -var).
`

// UsageCheck is the help text of roofline check.
const UsageCheck = `Usage: roofline [global options] check [options]

  Makes the agent's observation once, read-only (no state lock): for each
  server of the state, whether its process runs, /health answers and a short
  generation succeeds, with the measured and predicted KV cache, the last
  gate and bench results, and what roofline agent did (restarts, give-ups
  and their classified causes, from the journal).

  Exit status: 0 when every server is as the state records, 2 when any
  drifted (gone, failed, unhealthy), 1 on an error.

Options:
  -json           Print the report as JSON.
  -textfile=FILE  Also write the metrics for node_exporter's textfile
                  collector (atomically).
  -var NAME=VALUE Set a variable block's value (repeatable).
  -var-file=FILE  Read variable values from FILE (repeatable; in order
                  with -var).
`

// UsageApply is the help text of roofline apply.
const UsageApply = `Usage: roofline [global options] apply [options] [PLANFILE]

  Plans (unless given a saved plan), shows the plan and asks for "yes", then
  converges: stops what must go first (freeing GPUs and ports), starts new
  servers in parallel, waits for each to become ready, runs its gates
  (health, tool-call smoke, benchmark) and only then promotes it. A
  create_before_destroy replacement starts beside the old server and the old
  one is stopped only after the new one passed; if it fails, the old one
  keeps serving. The state is written before and after every start and stop.

  A saved plan (roofline plan -out=FILE) is refused once the state or the
  GPUs changed since it was made.

  Ctrl-C works as in Terraform: the first finishes the steps in flight (a
  rollout runs to its end, its drain included) and starts nothing new; a
  second exits at once, leaving what runs running, recorded in the state.

Options:
  -auto-approve         Do not ask for confirmation.
  -json                 Stream one-line JSON messages (docs/json.md): the plan,
                        each server's progress, gate results, the summary.
                        Needs -auto-approve or a plan file.
  -parallelism=N        Start or stop at most N servers at once (default 10).
  -target=server.NAME   Apply only this server (repeatable).
  -replace=server.NAME  Replace this server even if unchanged (repeatable).
  -refresh-only         Only record what changed outside roofline.
  -inventory=FILE       GPU snapshot to use instead of NVML.
  -refresh-probes       Probe the engines again instead of using the cache.
  -lock-timeout=DUR     How long to wait for the state lock (default 0s).
  -lock=false           Take no state lock (dangerous).
  -var NAME=VALUE       Set a variable (repeatable); see docs/language.md for
                        roofline.rfvars, *.auto.rfvars and ROOFLINE_VAR_NAME.
  -var-file=FILE        Read variable values from FILE (repeatable; in order
                        with -var).
  -no-color             No terminal colours.
  -input=false          Never prompt: without -auto-approve or a plan file,
                        fail before planning. Also when stdin is not a
                        terminal, or ROOFLINE_INPUT=0.
  -compact-warnings     One line per warning.
`

// UsageDestroy is the help text of roofline destroy.
const UsageDestroy = `Usage: roofline [global options] destroy [options]

  Stops every server in the state (or the -target ones) and its children,
  SIGTERM first, then SIGKILL after a grace period, and removes them from the
  state. Asks for "yes" unless -auto-approve.

Options:
  -auto-approve         Do not ask for confirmation.
  -json                 Stream one-line JSON messages (docs/json.md), as
                        apply -json does. Needs -auto-approve.
  -target=server.NAME   Destroy only this server (repeatable).
  -parallelism=N        Stop at most N servers at once (default 10).
  -inventory=FILE       GPU snapshot to use instead of NVML.
  -refresh-probes       Probe the engines again instead of using the cache.
  -lock-timeout=DUR     How long to wait for the state lock (default 0s).
  -lock=false           Take no state lock (dangerous).
  -var NAME=VALUE       Set a variable (repeatable); see docs/language.md for
                        roofline.rfvars, *.auto.rfvars and ROOFLINE_VAR_NAME.
  -var-file=FILE        Read variable values from FILE (repeatable; in order
                        with -var).
  -no-color             No terminal colours.
  -input=false          Never prompt: without -auto-approve, fail before
                        planning. Also when stdin is not a terminal, or
                        ROOFLINE_INPUT=0.
`

// UsageBench is the help text of roofline bench.
const UsageBench = `Usage: roofline [global options] bench [options] SERVER
       roofline [global options] bench [options] -url URL [-model NAME]
       roofline [global options] bench [options] SERVER -compare SERVER2 | -compare-url URL2

  Runs a load against a server and reports vllm bench serve's metrics under
  its names: TTFT, TPOT, ITL and E2EL (mean, median, P90, P99), request and
  token throughputs, goodput, failed requests. Prompts are token ids sent to
  /v1/completions (exact input lengths, from the server's /tokenize); every
  request generates exactly -output-tokens tokens (ignore_eos, min_tokens).
  Token counts come from the server's usage and are checked against its
  /metrics counter.

  For a SERVER, the load defaults to its gate.bench block and the block's
  thresholds are checked (when the load is the block's); a journal entry
  records the run. -compare runs the same load on a second server, one after
  the other, and prints both with their ratios: the way to compare two
  engines on one model.

Options:
  -url URL              The server's base URL, e.g. http://127.0.0.1:8000.
  -model NAME           The served model name (default: the first listed).
  -engine KIND          vllm or sglang (for the /metrics cross-check).
  -api-key-file FILE
                        The server's API key, sent as a bearer token (a named
                        SERVER uses its api_key or api_key_file by itself).
  -concurrency N        Requests in flight (closed loop). Default 1, or the
                        cap of an open loop.
  -request-rate R       Open loop: Poisson arrivals, R requests per second.
  -requests N           Measured requests (default 100).
  -duration D           Stop sending after D (e.g. 2m) instead of a count.
  -input-tokens N       Prompt length (default 1024).
  -output-tokens N      Generated tokens per request (default 128).
  -warmup N             Warm-up requests, not measured (default 1).
  -endpoint E           completions (default: token-id prompts, exact
                        lengths) or chat (text prompts, approximate).
  -goodput SLOS         e.g. "ttft:500 tpot:50 e2el:10000" (ms), as vLLM's
                        --goodput: good requests per second.
  -seed N               Seed of the prompts and arrivals (default 0).
  -compare SERVER2      Also run the load on SERVER2 and compare.
  -compare-url URL2     Also run the load on URL2 and compare.
  -json                 Print vllm bench serve's result JSON (with
                        -compare: {"a": ..., "b": ...}).

  Exits 1 when the benchmark cannot run or a threshold is missed.
` + VarsUsage

// UsageHealth is the help text of roofline health.
const UsageHealth = `Usage: roofline [global options] health SERVER [-json]
       roofline [global options] health -url URL [-model NAME] [-engine vllm|sglang] [-json]

  Checks a running server further than its /health endpoint, which in vLLM
  only reads an error flag: /health answers 200, /v1/models lists the served
  model name, one tiny streamed chat completion comes back with its usage
  chunk and [DONE], and /metrics parses and has the engine's series.

  SERVER is a server block of the configuration in the current directory;
  its address, served model name and engine come from there. -url checks
  any OpenAI-compatible server.

Options:
  -url URL          The server's base URL, e.g. http://127.0.0.1:8000.
  -model NAME       The served model name (default: the first one listed).
  -engine KIND      vllm or sglang, for the engine-specific checks.
  -api-key-file FILE
                    The server's API key, sent as a bearer token (a named
                    SERVER uses its api_key or api_key_file by itself).
  -json             Print the result as JSON.

  Exits 0 when every check passes, 1 otherwise.
` + VarsUsage

// UsageSmoke is the help text of roofline smoke.
const UsageSmoke = `Usage: roofline [global options] smoke SERVER [-reasoning] [-json]
       roofline [global options] smoke -url URL -model NAME [-engine vllm|sglang] [-reasoning] [-json]

  Checks that tool calls come back parsed, as a client expects them. It asks
  for the weather in Dallas with two tools offered and tool_choice "auto"
  ("required" would go through structured decoding and pass even with a
  wrong parser), then checks: finish_reason "tool_calls"; arguments that are
  JSON valid against the tool's schema; the same call when streamed,
  reassembled from its deltas; and an answer once the tool's result is sent
  back. A call that comes back as text in content fails with the likely
  cause: the tool-call parser or the chat template.

  With -reasoning (the default for a SERVER with reasoning_parser set) it
  also checks that the reasoning comes back apart from the answer, in
  reasoning or reasoning_content.

Options:
  -url URL          The server's base URL, e.g. http://127.0.0.1:8000.
  -model NAME       The served model name.
  -engine KIND      vllm or sglang, for engine-specific advice.
  -api-key-file FILE
                    The server's API key, sent as a bearer token (a named
                    SERVER uses its api_key or api_key_file by itself).
  -reasoning        Expect a reasoning parser.
  -timeout D        Time limit of each step (default 2m).
  -json             Print the result as JSON.

  Exits 0 when every step passes, 1 otherwise.
` + VarsUsage

// UsageImport is the help text of roofline import.
const UsageImport = `Usage: roofline [global options] import [options] ADDRESS ID

  Records a vLLM or SGLang server that runs already (started by hand, by
  systemd, by a script) as ADDRESS, without restarting it. ID finds it:
  "pid:1234" or "port:8000". roofline reads its command line, environment
  and start time from /proc and compares them with the server block:

    roofline import server.qwen3 port:8000

  When they match, the server is recorded and the next plan is empty. When
  they differ, it is recorded all the same and each difference is listed:
  the next plan replaces it. An import block in the configuration does the
  same through plan and apply (docs/language.md).

  A process in its shell's process group (not started with setsid) is
  recorded, but roofline refuses to stop it later: signalling the group
  could reach the shell. import says so.

Options:
  -generate-config-out=FILE
                    Write a server block for the process to FILE (it must not
                    exist), mapping its flags back to attributes, instead of
                    importing. Review it, then run import again.
  -inventory=FILE   A GPU snapshot file instead of NVML, as for plan.
  -lock-timeout=DUR How long to wait for the state lock.
` + VarsUsage

// UsageSnapshot is the help text of roofline snapshot.
const UsageSnapshot = `Usage: roofline [global options] snapshot -out=FILE [options]

  On the GPU host: writes what a plan in code review needs to see the host,
  with no secret in it: the state (redacted), each server's liveness and
  health, the GPU inventory with each GPU process attributed to its server,
  every engine's probe (identity, version, full flag list), each model's
  fingerprint, file manifest and memory facts, the ports held, and the
  footprints measured at start-up. Commit it beside the configuration (a
  timer can refresh it); CI runs roofline plan -review -snapshot=FILE.
  Changes nothing on the host and takes no lock.

Options:
  -out=FILE             Where to write the snapshot ("-" for stdout).
  -inventory=FILE       GPU snapshot to use instead of NVML.
  -refresh-probes       Probe the engines again instead of using the cache.
  -host=NAME            The host's name in review plans (default: hostname).
` + VarsUsage

// UsageStateMv is the help text of roofline state mv.
const UsageStateMv = `Usage: roofline [global options] state mv [options] SOURCE DESTINATION

  Renames a server in the state, as a moved block does at the next apply:
  server.beta becomes server.gamma without touching its process. The state
  record, the log file and the proxy's files take the new name, and the
  journal links the two names (roofline journal gamma shows beta's history).
  Rename the block in the configuration too, or the next plan destroys the
  new name and creates the old one. Takes the state lock.

    roofline state mv server.beta server.gamma
    roofline state mv 'server.web["a"]' 'server.web["b"]'

Options:
  -dry-run          Say what would move; change nothing.
  -lock-timeout=DUR How long to wait for the state lock (default 0s: fail at once).
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir.
` + VarsUsage

// UsageRollback is the help text of roofline rollback.
const UsageRollback = `Usage: roofline [global options] rollback [options] SERVER

  Points the proxy of SERVER back at the instance the last rollout replaced,
  which lifecycle { keep_previous = "10m" } kept running, drained and idle:
  no reload, traffic moves within a second and no request fails. The
  instance it switches away from is kept in its place, so a second rollback
  switches forward again. The state then differs from the configuration:
  the next plan replaces the server (or roll back the configuration too).

Options:
  -lock-timeout=DURATION  Wait this long for the state lock. Default 0s.
` + VarsUsage

// UsageProxy is the help text of roofline proxy.
const UsageProxy = `Usage: roofline [global options] proxy -listen HOST:PORT -target-file FILE [-status-file FILE] [-api-key-file FILE]
          [-limits-file FILE] [-max-body BYTES] [-max-buffered BYTES] [-max-conns N]

  Forwards HTTP (streaming included) from the server's public port to the
  engine instance named in the target file. apply starts one per server with
  lifecycle { create_before_destroy = true } and rewrites the target file to
  switch to a new instance after it passed its gates.

  -api-key-file FILE  When the file exists, requests other than /health and
                      /metrics need "Authorization: Bearer KEY" (401
                      otherwise); re-read when it changes.
  -limits-file FILE   When the file exists, its limits (JSON, written by
                      apply from the server's proxy block) replace the
                      ones below; re-read when it changes, no restart.
  -max-body BYTES     Largest request body (413 above). Default 64 MiB.
  -max-buffered BYTES Request bodies held at once, all clients (503 above).
                      Default 256 MiB.
  -max-conns N        Open client connections at once. Default 4096.
`
