package config

// VCS configures build_and_version_control.
//
//	vcs:
//	  hooks: true   # let git run the repository's hooks (default false)
type VCS struct {
	// Hooks lets git run the repository's hooks (pre-commit, ...). Off by
	// default: hooks are programs the repository names.
	Hooks bool `yaml:"hooks"`
}
