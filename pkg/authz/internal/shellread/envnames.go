package shellread

import (
	"slices"
	"strings"
)

// codeEnvNames are variables that make a shell, git, the dynamic loader, an
// interpreter or a tool run code, load code, or change which program or
// file runs or where "~" leads. Setting one asks in every mode and is never
// covered by a grant.
var codeEnvNames = []string{
	// Shells.
	"MAILPATH", "MAILCHECK", "MAIL", "SSLKEYLOGFILE", "FCEDIT", "SUDO_EDITOR", "IPYTHONDIR", "PSQLRC", "TEXTDOMAIN",
	"TEXTDOMAINDIR", "PGSERVICEFILE", "PGPASSFILE", "MYSQL_HOME", "SQLITE_HISTORY", "NPM_TOKEN", "histchars", "HISTIGNORE", "HISTTIMEFORMAT", "RIPGREP_CONFIG_PATH", "GNUMAKEFLAGS", "COMPILER_PATH",
	"GCC_EXEC_PREFIX", "VIMINIT", "EXINIT", "MYVIMRC", "MYGVIMRC", "VIMRUNTIME", "MANOPT", "MANPATH", "MANROFFOPT",
	"GIT_EDITOR", "WGETRC", "SCREENRC", "TMUX", "GREP_OPTIONS", "LESS", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND",
	"IFS", "CDPATH", "GLOBIGNORE", "EXECIGNORE", "HISTFILE", "HISTCONTROL", "INPUTRC", "TMOUT", "SHELL",
	"BASH_LOADABLES_PATH", "BASH_COMPAT", "BASH_XTRACEFD", "ZDOTDIR", "FPATH", "PWD", "OLDPWD", "POSIXLY_CORRECT",
	// Which programs and files run, where ~ and configs are.
	"PATH", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS", "XDG_RUNTIME_DIR",
	// Programs that other programs start.
	"PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL", "BROWSER", "SUDO_ASKPASS", "SSH_ASKPASS",
	"LESSOPEN", "LESSCLOSE", "LESSKEY", "TAR_OPTIONS", "GZIP", "ZIPOPT", "UNZIP", "RSYNC_RSH", "CVS_RSH",
	"GPG_AGENT_INFO", "GNUPGHOME", "KUBECONFIG", "DOCKER_HOST", "DOCKER_CONFIG", "CONTAINER_HOST",
	"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "CLOUDSDK_CONFIG", "SSH_AUTH_SOCK", "TERMINFO",
	"TERMINFO_DIRS", "MAGIC", "LOCPATH", "NLSPATH", "GCONV_PATH", "HOSTALIASES", "RES_OPTIONS", "LOCALDOMAIN",
	"GLIBC_TUNABLES", "MALLOC_CHECK_", "MAKEFLAGS", "MFLAGS", "MAKEFILES", "MAKE",
	// Compilers and build tools run what these name.
	"CC", "CXX", "CPP", "LD", "AR", "AS", "NM", "RANLIB", "STRIP", "OBJCOPY", "FC", "CFLAGS", "CXXFLAGS",
	"CPPFLAGS", "LDFLAGS", "RUSTFLAGS", "RUSTDOCFLAGS", "RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER",
	"RUSTDOC", "GOFLAGS", "GOTOOLCHAIN", "GOROOT", "GOPATH", "GOENV", "GOPROXY", "GONOSUMDB", "GONOSUMCHECK",
	"GONOSUMVERIFY", "GOINSECURE", "GOPRIVATE", "GOSUMDB", "GOEXPERIMENT", "GOCACHE", "GOMODCACHE", "GOBIN",
	"PKG_CONFIG", "PKG_CONFIG_PATH", "CMAKE_C_COMPILER_LAUNCHER", "CCACHE_PREFIX", "DISTCC_HOSTS",
	// Interpreters load code from these.
	"PERL5LIB", "PERL5OPT", "PERLLIB", "PERL5DB", "PERL_UNICODE", "RUBYOPT", "RUBYLIB", "GEM_HOME", "GEM_PATH",
	"BUNDLE_GEMFILE", "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "JAVA_TOOL_OPTIONS",
	"_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_HOME", "CLASSPATH", "MAVEN_OPTS", "GRADLE_OPTS", "ANT_OPTS",
	"LUA_PATH", "LUA_CPATH", "LUA_INIT", "TCLLIBPATH", "R_PROFILE", "R_PROFILE_USER", "R_ENVIRON",
	"R_ENVIRON_USER", "JULIA_LOAD_PATH", "PHPRC", "PHP_INI_SCAN_DIR", "ERL_AFLAGS", "ERL_ZFLAGS", "ELIXIR_ERL_OPTIONS",
	"DENO_DIR", "BUN_INSTALL", "DOTNET_STARTUP_HOOKS", "CORECLR_PROFILER", "CORECLR_PROFILER_PATH",
	// Network and trust: where traffic goes and which servers are believed.
	"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",
	"REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CURL_HOME", "WGETRC", "NETRC",
}

// codeEnvPrefixes are prefixes of such variables (compared in upper case).
var codeEnvPrefixes = []string{
	"LESS", "HG", "FZF_", "KRB5", "LD_", "DYLD_", "GIT_", "BASH_", "READLINE_", "CGO_", "GO", "OPENSSL_", "PYTEST_", "CMAKE_", "DBUS_",
	"VIM", "MAN", "XDG_", "SYSTEMD_", "CCACHE_", "DISTCC_", "CONAN_", "MAVEN_", "SBT_", "LEIN_", "COURSIER_",
	"HATCH_", "PDM_", "PIPENV_", "VIRTUAL_ENV", "CONDA_", "MAMBA_", "RUSTUP_", "JULIA_", "R_", "OCAML", "OPAM", "NPM_CONFIG_", "YARN_", "PNPM_", "PIP_", "UV_", "POETRY_",
	"CARGO_", "PYTHON", "NODE_", "PERL", "RUBY", "JAVA_", "JDK_", "GRADLE_", "DOTNET_", "CORECLR_",
	"COMPlus_", "MALLOC_", "SSH_", "GPG", "GNUPG", "DOCKER_", "BUILDKIT_", "PODMAN_", "HELM_", "TF_CLI_",
	"AWS_", "CLOUDSDK_", "GOOGLE_APPLICATION", "AZURE_CONFIG", "KUBE",
}

// benignEnvNames are variables that change no program, file or code a
// command runs: they are allowed like the command itself.
var benignEnvNames = []string{
	"LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
	"COLUMNS", "LINES", "CI", "DEBUG", "VERBOSE", "GOOS", "GOARCH", "GOARM", "GOAMD64", "GO386", "CGO_ENABLED",
	"GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GOTRACEBACK", "GODEBUG", "GO111MODULE", "RUST_LOG",
	"RUST_BACKTRACE", "RUST_MIN_STACK", "NODE_ENV", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE",
	"PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONFAULTHANDLER", "DEBIAN_FRONTEND", "HUSKY",
	"TERM_PROGRAM", "PAGER_DISABLE", "GIT_PAGER_IN_USE", "SOURCE_DATE_EPOCH", "TF_IN_AUTOMATION",
}

// CodeEnv reports whether setting name can make a command run code or
// programs other than the ones written, or read and write other files.
func CodeEnv(name string) bool {
	if slices.Contains(benignEnvNames, name) {
		return false
	}
	if slices.Contains(codeEnvNames, name) || slices.Contains(codeEnvNames, strings.ToUpper(name)) {
		return true
	}
	up := strings.ToUpper(name)
	for _, p := range codeEnvPrefixes {
		if strings.HasPrefix(up, strings.ToUpper(p)) {
			return true
		}
	}
	return false
}

// BenignEnv reports a variable known to change nothing that runs.
func BenignEnv(name string) bool {
	return slices.Contains(benignEnvNames, name) || strings.HasPrefix(name, "LC_")
}
