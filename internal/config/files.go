package config

import "strings"

// File names. A roofline configuration is the *.hcl (native syntax) and
// *.hcl.json (HCL's JSON syntax, for generators) files of one directory,
// plus its variable files (inputs.go). *.hcl is shared with other HCL tools,
// so the names they claim by a second suffix are theirs: a Packer template
// (*.pkr.hcl) or a Terraform test (*.tftest.hcl) beside a roofline
// configuration is skipped with a warning, never half-read.
const (
	NativeSuffix = ".hcl"
	JSONSuffix   = ".hcl.json"
)

// otherTools maps the second suffixes other tools give their HCL files to
// the tool's name.
var otherTools = []struct{ suffix, tool string }{
	{".pkr.hcl", "Packer"}, {".pkr.json", "Packer"}, {".pkrvars.hcl", "Packer"}, {".pkrvars.json", "Packer"},
	{".tftest.hcl", "Terraform"}, {".tftest.json", "Terraform"}, {".tfmock.hcl", "Terraform"}, {".tfquery.hcl", "Terraform"},
	{".tfstack.hcl", "Terraform"}, {".tfdeploy.hcl", "Terraform"}, {".terraform.lock.hcl", "Terraform"},
	{".nomad.hcl", "Nomad"}, {".nomad.json", "Nomad"}, {".waypoint.hcl", "Waypoint"}, {".vault.hcl", "Vault"},
	{".consul.hcl", "Consul"}, {".boundary.hcl", "Boundary"},
}

// OtherTool returns the tool whose file name is (Packer for build.pkr.hcl),
// or "" when the name is not another tool's.
func OtherTool(name string) string {
	lower := strings.ToLower(name)
	for _, o := range otherTools {
		if strings.HasSuffix(lower, o.suffix) || lower == strings.TrimPrefix(o.suffix, ".") {
			return o.tool
		}
	}
	return ""
}

// IsConfigFile reports whether a file name is a roofline configuration file
// (native or JSON), as LoadDir reads it.
func IsConfigFile(name string) bool {
	if strings.HasPrefix(name, ".") || OtherTool(name) != "" || name == LockFileName {
		return false
	}
	return strings.HasSuffix(name, NativeSuffix) || strings.HasSuffix(name, JSONSuffix)
}

// IsJSONFile reports whether a configuration or variable file is written in
// JSON syntax.
func IsJSONFile(name string) bool { return strings.HasSuffix(name, ".json") }

// IsFormattable reports whether fmt rewrites the file: roofline's native
// syntax files (configuration and variable files); JSON is left alone.
func IsFormattable(name string) bool {
	if strings.HasPrefix(name, ".") || OtherTool(name) != "" || IsJSONFile(name) {
		return false
	}
	return strings.HasSuffix(name, NativeSuffix) || isVarFile(name)
}

// LockFileName is the engine lock file "roofline init" writes beside the
// configuration; it is not configuration.
const LockFileName = "roofline.lock.hcl"
