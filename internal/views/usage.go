package views

import (
	"strings"

	"github.com/roofline/roofline/internal/gpu"
	"github.com/roofline/roofline/internal/vram"
)

// The help texts of the commands (roofline COMMAND -h, roofline help
// COMMAND): each starts with its usage line.

// VarsUsage is the help text of the variable flags, shared by every command
// that reads the configuration.
const VarsUsage = `  -var NAME=VALUE, -var-file=FILE
          Variable values, as for plan: the configuration (its state_dir,
          say) may depend on them. See docs/language.md.
`

// UsageState is the help text of roofline state.
const UsageState = `Usage: roofline [global options] state <subcommand> [options] [args]

  Inspects and changes roofline's record of the servers it started. The
  state file is state.json in the state directory; docs/state.md describes it.

Subcommands:
  list    List the servers in the state
  show    Show one server in the state
  mv      Rename a server without restarting it
  rm      Forget a server without stopping it

Related: "roofline force-unlock ID" releases a stuck state lock.
`

// UsageStatus is the help text of roofline status.
const UsageStatus = `Usage: roofline [global options] status [-json]

  For every server in the state: engine and version, model, port, GPUs, pid,
  uptime, whether the process is still the one roofline started, health, and
  the KV cache measured at start-up beside what plan predicted.

Options:
  -json   Print a JSON array.

Exit codes: 0 every server runs and is healthy (or there are none); 1 error;
2 a server is gone, failed or not healthy.
` + VarsUsage

// UsageLogs is the help text of roofline logs.
const UsageLogs = `Usage: roofline [global options] logs [options] SERVER

  Prints the engine's log (stdout and stderr) of SERVER.

Options:
  -n=N   Print the last N lines (default 100; 0 prints the whole log).
  -f     Follow: keep printing new lines until interrupted.
` + VarsUsage

// UsageShow is the help text of roofline show.
const UsageShow = `Usage: roofline [global options] show [-json] [PLANFILE]

  Without an argument, prints the state. With a plan file (roofline plan
  -out=FILE), prints the plan as plan did.

Options:
  -json             Print JSON.
  -format=markdown  Print a plan file for a pull request comment.
` + VarsUsage

// UsageJournal is the help text of roofline journal.
const UsageJournal = `Usage: roofline [global options] journal [SERVER] [-json]

  Prints the journal kept in the state directory: one entry per rollout and
  per benchmark, with the engine and its version, the image digest or
  executable identity, the model, the GPUs, driver and CUDA versions, and the
  gate and benchmark results. With SERVER, only that server's entries.

Options:
  -json   Print the entries as a JSON array.
` + VarsUsage

// UsageModel is the help text of roofline model.
const UsageModel = `Usage: roofline [global options] model <subcommand> [args]

Subcommands:
  inspect    Show a model folder's architecture and the completeness checks
  manifest   Write sha256 checksums of a model folder
  verify     Verify a model folder against its checksums
  synth      Write a synthetic sparse model folder (rehearsals and tests)
`

// UsageModelInspect is the help text of roofline model inspect.
const UsageModelInspect = `Usage: roofline [global options] model inspect DIR [-json] [-tensors]

  Reads a model folder without reading its weights: config.json (the nested
  text_config of multimodal models), the header of every .safetensors shard
  and model.safetensors.index.json. Prints the architecture (parameters,
  bytes by dtype, layers, heads, KV heads, head dim, MoE, MLA, sliding window,
  quantization) and the completeness and air-gap checks: required files
  (config.json, tokenizer.json, tokenizer_config.json, generation_config.json),
  the chat template, truncated or missing shards, pickle weights.

  Exits 1 when a check found an error.

Options:
  -json      Print one JSON object.
  -tensors   With -json, include every tensor (name, dtype, shape, bytes, file).
`

// UsageModelManifest is the help text of roofline model manifest.
const UsageModelManifest = `Usage: roofline [global options] model manifest DIR [-o FILE]

  Writes the sha256 of every file in DIR in sha256sum format
  ("<hex>  <path relative to DIR>", sorted), so that the folder can be checked
  after a transfer with "roofline model verify" or "sha256sum -c". Names
  starting with a dot (.cache, .git) are skipped. Files are hashed in
  parallel; a progress bar shows on a terminal.

Options:
  -o FILE   Where to write (default: DIR.sha256 beside the folder, as in
            checksums = "/models/Qwen3-8B.sha256"); "-" writes to stdout.
`

// UsageModelVerify is the help text of roofline model verify.
const UsageModelVerify = `Usage: roofline [global options] model verify DIR [-checksums FILE] [-json]

  Hashes every file listed in the checksum file and compares. Missing files,
  files whose checksum differs and files in DIR that the list does not name
  are reported, and the exit status is 1. A progress bar shows on a terminal.

Options:
  -checksums FILE   The sha256sum-format list (default: DIR.sha256 beside the folder).
  -json             Print the result as JSON.
`

// UsageModelSynth is the help text of roofline model synth.
func UsageModelSynth(arches []string) string {
	return `Usage: roofline [global options] model synth -arch NAME DIR [-shards N] [-dtype bf16|fp8] [-layers N]

  Writes a stand-in model folder for rehearsals and tests: the real
  config.json values, tensor names and shapes of the architecture, valid
  safetensors headers and a small tokenizer with a chat template. The weights
  are sparse files of the real size that read as zeros and take no disk: the
  folder passes "roofline model inspect" and sizes like the real model in
  "roofline vram", but it cannot generate text.

  DIR must not exist or be empty.

Options:
  -arch NAME     One of: ` + strings.Join(arches, ", ") + `.
  -shards N      Shard count (default: the real model's).
  -dtype D       bf16 or fp8 (F8_E4M3 with 128x128 block scales); default: the real model's.
  -layers N      Decoder layer count, for a smaller variant with real per-layer shapes.
`
}

// UsageVRAM is the help text of roofline vram.
var UsageVRAM = `Usage: roofline [global options] vram -model DIR -tp N -ctx LEN [options]

  Predicts what vLLM or SGLang will compute at start-up for the model in DIR
  on TP x PP GPUs: per GPU the weights, the profiled activation peak, the
  non-torch overhead, CUDA graphs, the KV cache budget, the KV tokens and how
  many requests of LEN tokens fit at once. Then a verdict: whether the engine
  starts and holds one request of LEN (or -concurrency N of them), with the
  changes that would make it fit. Only the safetensors headers are read.

  The GPUs come from -gpu-gib, -gpu NAME or a snapshot (-inventory FILE,
  written by "roofline gpu -json"); with none of them, from this host's NVML.
  A snapshot also gives each GPU's free memory: vLLM refuses to start when it
  is below total x utilization, and SGLang's budget shrinks with it.

Options:
  -model DIR                  Model folder (config.json and .safetensors files).
  -tp N                       Tensor parallel size (default 1).
  -pp N                       Pipeline parallel size (default 1).
  -ctx LEN                    max_model_len / context length (default: the model's maximum).
  -gpu-gib F                  Per-GPU total memory as the CUDA runtime reports it, in GiB.
  -gpu NAME                   A common GPU: ` + strings.Join(gpu.PresetNames(), ", ") + `.
  -inventory FILE             GPUs from a snapshot file ("roofline gpu -json").
  -gpus 0,1                   GPU indexes to use, TP x PP of them (default: the first ones).
  -engine vllm|sglang         Engine (default vllm).
  -engine-version V           Engine version (default ` + vram.DefaultVLLMVersion + ` for vLLM, ` + vram.DefaultSGLangVersion + ` for SGLang).
  -util F                     vLLM --gpu-memory-utilization / SGLang --mem-fraction-static
                              (default: the engine's).
  -kv-cache-dtype D           auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla (default auto).
  -block-size N               vLLM --block-size / SGLang --page-size (default: the engine's).
  -max-num-seqs N             vLLM --max-num-seqs (default: the engine's for the GPU).
  -max-num-batched-tokens N   vLLM --max-num-batched-tokens / SGLang --chunked-prefill-size.
  -concurrency N              Requests of LEN tokens that must fit at once (default 1).
  -enforce-eager              No CUDA graphs (vLLM --enforce-eager, SGLang --disable-cuda-graph).
  -json                       Print one JSON object.

Exit status: 0 when the model fits, 1 when it does not fit or on an error.
`

// UsageGPU is the help text of roofline gpu.
const UsageGPU = `Usage: roofline [global options] gpu [-json] [-inventory FILE]

  Shows every NVIDIA GPU of this host with its memory (total, used, free, as
  the CUDA runtime and the engines see it) and the compute processes on it, with
  driver and CUDA versions.

  "roofline gpu -json > gpus.json" on the GPU host records a snapshot that
  -inventory accepts here and on vram, plan and apply: that is how a plan is
  made in code review, on a machine without GPUs.

Options:
  -json             Print the snapshot as JSON (the -inventory file format).
  -inventory FILE   Read the GPUs from a snapshot file instead of NVML.
`

// UsageStateList is the help text of roofline state list.
const UsageStateList = `Usage: roofline [global options] state list [options]

  Lists the address of every server recorded in the state, one per line.

Options:
  -json             Print the state's serial, lineage and a summary per server as JSON.
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir
                    (works when the configuration does not load).
` + VarsUsage

// UsageStateShow is the help text of roofline state show.
const UsageStateShow = `Usage: roofline [global options] state show [options] ADDRESS

  Shows everything the state records about one server: its engine, model,
  command line, process identity, log file, gate results and footprint.
  ADDRESS is server.NAME (or just NAME).

Options:
  -json             Print the server's record exactly as stored.
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir.
` + VarsUsage

// UsageStateRm is the help text of roofline state rm.
const UsageStateRm = `Usage: roofline [global options] state rm [options] ADDRESS...

  Removes servers from the state without stopping them. Their processes keep
  running and roofline no longer manages them: the next plan sees their
  ports and GPUs as taken by foreign processes. Prints each one's pid so you
  can stop it yourself. Takes the state lock.

Options:
  -dry-run          Say what would be removed; change nothing.
  -lock-timeout=DUR How long to wait for the state lock (default 0s: fail at once).
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir.
` + VarsUsage

// UsageOutput is the help text of roofline output.
const UsageOutput = `Usage: roofline [global options] output [options] [NAME]

  Prints the configuration's output values: what gateways and clients need,
  such as each server's base URL and served model name (server.NAME.base_url,
  .url, .port, .served_model_name, .api_key_env; never an API key). The
  values come from the configuration, as apply makes it true: run it after
  roofline apply.

  Without NAME, every output is listed as NAME = VALUE, sensitive ones as
  (sensitive value). With NAME, that output's value is printed, in clear
  even when sensitive (as terraform output NAME does).

Options:
  -json   Print JSON: without NAME an object of {sensitive, type, value}
          per output (Terraform's shape), with NAME the value.
  -raw    Print the value of NAME, a string, number or bool, as it is
          (no quotes, no newline), for shell scripts.
` + VarsUsage

// UsagePlan is the help text of roofline plan.
const UsagePlan = `Usage: roofline [global options] plan [options]

  Compares the configuration with the state and with what is really there:
  the GPUs and their foreign processes, the installed engines and their flag
  lists, the model folders, the ports. Prints what apply would do, flag by
  flag, with the VRAM each server needs per GPU, and every problem that can
  be found before an engine starts. Changes nothing.

  Runs without GPUs from a recorded inventory (-inventory, or the roofline
  block's inventory attribute). In code review, where the engines and the
  model folders exist only on the GPU host, add -review: an engine that
  cannot be probed is then checked against roofline's built-in flag list of
  its pinned version, and a missing model folder skips the VRAM check, both
  with a warning. A review plan can be read but not applied.

Options:
  -out=FILE             Save the plan; "roofline apply FILE" applies exactly it
                        and refuses it once the state or the GPUs changed.
  -json                 Print the plan as a stream of one-line JSON messages
                        (docs/json.md); the last one holds the whole plan.
  -format=markdown      Print the plan for a pull request comment: the risk
                        line, then one collapsible section per server.
  -detailed-exitcode    Exit 0 with no changes, 1 on errors, 2 with changes.
  -target=server.NAME   Plan only this server (repeatable).
  -replace=server.NAME  Replace this server even if unchanged (repeatable).
  -destroy              Plan to stop every server.
  -refresh-only         Only report what changed outside roofline.
  -inventory=FILE       GPU snapshot to use instead of NVML.
  -review               Plan for code review (see above).
  -snapshot=FILE        Plan against a host snapshot (roofline snapshot on the
                        GPU host): its state, processes, GPUs, engine probes
                        and model facts. Nothing on this machine is probed.
                        Implies -review.
  -snapshot-max-age=DUR Warn when the snapshot is older (default 24h).
  -fail-on=downtime,destroy
                        Exit 4 when the plan replaces a server with downtime
                        (downtime) or destroys one (destroy).
  -refresh-probes       Probe the engines again instead of using the cache.
  -lock-timeout=DUR     How long to wait for the state lock (default 0s).
  -lock=false           Take no state lock (dangerous while an apply runs).
  -var NAME=VALUE       Set a variable (repeatable); see docs/language.md for
                        roofline.rfvars, *.auto.rfvars and ROOFLINE_VAR_NAME.
  -var-file=FILE        Read variable values from FILE (repeatable; in order
                        with -var).
  -no-color             No terminal colours.
  -input=false          Never prompt (plan never does; accepted for scripts).
  -compact-warnings     One line per warning.
  -parallelism=N        Accepted for scripts; plan's refresh is already fast.

  Warnings follow the plan on stdout, merged when repeated and counted in
  the summary line; errors go to stderr.

Exit codes: 0 success; 1 error; with -detailed-exitcode, 2 when there are
changes, or drift (a server gone or not healthy, also under -refresh-only);
4 when a -fail-on policy is broken (before 2).

Environment: ROOFLINE_CLI_ARGS and ROOFLINE_CLI_ARGS_plan add arguments;
ROOFLINE_IN_AUTOMATION drops the "run this next" advice; ROOFLINE_LOG
(trace, debug, info, warn, error) and ROOFLINE_LOG_PATH write a debug log.
`

// UsageValidate is the help text of roofline validate.
const UsageValidate = `Usage: roofline [global options] validate [-json]

  Checks the *.hcl files of the current directory (or -chdir=DIR) for
  mistakes that need nothing but the files: syntax, unknown blocks and
  attributes, references, ports, GPU lists, value ranges, gate thresholds.
  Every problem is reported, each with its file, line and a snippet.
  It does not look at GPUs, engines or model folders: "roofline plan" does.

  Exit status: 0 valid (warnings allowed), 1 invalid.

Options:
  -json             Print the result as JSON (Terraform's validate -json shape).
  -var NAME=VALUE   Set a variable (repeatable); see docs/language.md for
                    roofline.rfvars, *.auto.rfvars and ROOFLINE_VAR_NAME.
  -var-file=FILE    Read variable values from FILE (repeatable; in order
                    with -var).
`

// UsageFmt is the help text of roofline fmt.
const UsageFmt = `Usage: roofline [global options] fmt [options] [TARGET...]

  Rewrites the *.hcl and variable files (roofline.rfvars, *.auto.rfvars) of
  the current directory (or the given files and directories) to the
  canonical layout: indentation, aligned equals signs. It prints the name of
  each file it changed. A file with a syntax error is reported and left as
  it is. JSON files (*.hcl.json) and other tools' files (*.pkr.hcl, ...) are
  left alone. TARGET "-" formats standard input to standard output, for an
  editor's format-on-save.

Options:
  -check       Change nothing; exit 3 when a file would change (as
               "terraform fmt -check"), 0 when all are formatted.
  -diff        Print a unified diff of each change.
  -list=false  Do not print the names of changed files.
  -write=false Do not rewrite files (implied by -check).
  -recursive   Also format files in subdirectories.
`

// UsageInit is the help text of roofline init.
const UsageInit = `Usage: roofline [global options] init [-upgrade] [-inventory=FILE]

  Creates the state directory and probes every engine of the configuration
  (version and flag list, from the install itself), filling the probe cache
  that plan uses. Run it once after cloning a configuration, and again after
  an engine is upgraded (plan also re-probes an install whose files changed).
  Reports the GPU inventory it would use. Safe to run any number of times.

  Writes the engine lock file roofline.lock.hcl beside the configuration:
  per engine, the install's identity and its flag list (with a hash). Commit
  it: on the GPU host, plan fails when an install changed behind it. init
  adds engines that are new and fails when a locked one changed; init
  -upgrade records the installs as they are now and prints each engine's
  flag diff.

Options:
  -inventory=FILE   GPU snapshot to use instead of NVML.
  -upgrade          Update the lock file to the installed engines.
` + VarsUsage

// UsageDiagnose is the help text of roofline diagnose.
const UsageDiagnose = `Usage: roofline [global options] diagnose [-json] SERVER
       roofline [global options] diagnose [-json] -file LOG

  Reads the end of an engine's log (vLLM V0 or V1, SGLang; plain,
  multiprocess-prefixed or docker-compose-prefixed) and names the cause of a
  failed start: the class, the evidence lines with their line numbers, and
  the action to take. It says "unknown" rather than guess.

  SERVER reads the log apply wrote for that server,
  <state_dir>/logs/SERVER.log, from the configuration in this directory.

  Classes: oom_weights, kv_too_small, no_kv_memory, free_mem_below_util,
  port_in_use, missing_files, unsupported_arch, driver_mismatch, nccl_error,
  bad_flag, oom_cudagraph, sglang_mem_fraction, unknown.

  Exits 0 when a diagnosis was made (unknown included), 1 when the log
  cannot be read.

Options:
  -file LOG   Read this log file ("-" reads standard input).
  -json       Print one JSON object: class, title, summary, cause, action,
              evidence (an array of {line, text}) and file.
` + VarsUsage

// UsageVersion is the help text of roofline version.
const UsageVersion = `Usage: roofline [global options] version [-json]

  Prints roofline's version and the Go runtime it was built with.

Options:
  -json   Print a JSON object.
`

// UsageFlags is the help text of roofline flags.
const UsageFlags = `Usage: roofline [global options] flags ENGINE [QUERY] [-json] [-refresh]

  Lists the flags of the engine that the engine block ENGINE runs, read from
  its own --help (vLLM: "serve --help=all", or "serve --help" before 0.11;
  SGLang: "launch_server --help"), with their aliases, value, choices, default
  and whether they are deprecated. The probe is cached in the state directory
  until the engine's executable changes.

  QUERY keeps the flags whose name, an alias or the help contains it ("_" and
  "-" alike): flags that match by name first, then by help. It may start
  with dashes.

    roofline flags vllm_016 max-model-len
    roofline flags vllm_016 --max-model-len -json

Options:
  -json      Print a JSON array: name, aliases, metavar, choices, suggested,
             default (null when the engine prints none), deprecated,
             takes_value, nargs, negatable, group, help.
  -refresh   Probe the engine again instead of using the cache.
` + VarsUsage

// UsageForceUnlock is the help text of roofline force-unlock.
const UsageForceUnlock = `Usage: roofline [global options] force-unlock [options] LOCK_ID

  Removes the state lock with the given ID, which a failed "state is
  locked" error prints. A roofline that is killed releases its lock by
  itself (the operating system drops it), so this is needed only when the
  holder still runs but is stuck. The holder then loses the lock: its later
  attempts to save the state fail instead of overwriting newer changes.
  Asks for "yes" first.

Options:
  -force            Do not ask for confirmation.
  -state-dir=DIR    Use the state in DIR instead of the configuration's state_dir.
`

// UsageHelp is the help text of roofline help.
const UsageHelp = "Usage: roofline [global options] help [COMMAND [SUBCOMMAND]]\n"

// UsageRehearsal is the help text of the hidden rehearsal command.
const UsageRehearsal = `Usage: roofline [global options] rehearsal KIND@VERSION ARGS...

  Runs roofline's rehearsal engine, a stand-in for vLLM or SGLang that needs
  no GPU. ARGS are the emulated program's own arguments, passed through
  verbatim:

    roofline rehearsal vllm@0.16.0 serve /models/qwen3 --port 8001 ...
    roofline rehearsal vllm@0.16.0 --version
    roofline rehearsal sglang@0.5.6.post2 -m sglang.launch_server --model-path ...
    roofline rehearsal sglang@0.5.6.post2 -c "import sglang; print(sglang.__version__)"

  roofline starts it itself for an engine block with rehearsal = true.
  The ROOFLINE_REHEARSAL_* environment variables are in docs/rehearsal.md.
`
