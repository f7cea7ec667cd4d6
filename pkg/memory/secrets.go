package memory

import (
	"regexp"
	"strings"
	"sync"
)

// A model must not persist secrets: memories outlive the conversation, are
// shared with other conversations, and on PostgreSQL with other machines.
// Credential finds content that looks like one and says what it looks like.
//
// The patterns are hand-written rather than taken from a secret scanner
// library (gitleaks, trufflehog): those carry hundreds of provider rules, a
// configuration loader and their dependencies, while the classes that matter
// here are few and stable — private keys, cloud access keys, bearer and API
// tokens, passwords in URLs and .env-style secret assignments. A false
// positive costs the model a rephrase; a false negative stores a secret.

type secretPattern struct {
	what string
	re   *regexp.Regexp
}

// secretPatterns are compiled on the first store, not at start-up: a toold
// whose memory tool is not used keeps none of them (issue 27's idle RSS).
var secretPatterns = sync.OnceValue(func() []secretPattern {
	return []secretPattern{
		{"a private key", regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)},
		{"an AWS access key id", regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[0-9A-Z]{16}\b`)},
		{"an AWS secret access key", regexp.MustCompile(`(?i)aws.{0,20}(?:secret|key).{0,20}[:=]\s*["']?[A-Za-z0-9/+]{40}\b`)},
		{"a Google Cloud service account key", regexp.MustCompile(`"type"\s*:\s*"service_account"|"private_key_id"\s*:\s*"[0-9a-f]{20,}"`)},
		{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`)},
		{"a bearer token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{16,}=*`)},
		{"an Authorization header", regexp.MustCompile(`(?i)\bauthorization\s*:\s*(?:basic|token|bearer)\s+\S{8,}`)},
		{"a GitHub token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b`)},
		{"a GitLab token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}\b`)},
		{"a Slack token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`)},
		{"an API secret key", regexp.MustCompile(`\b(?:sk|rk)[-_](?:live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_\-]{20,}\b`)},
		{"a JSON Web Token", regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`)},
		{"a password in a URL", regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:[^\s/@]{3,}@`)},
	}
})

// envSecret matches a .env-style assignment to a variable whose name says it
// holds a secret: API_KEY=..., export DB_PASSWORD="...", secret_token: ...
// Compiled on first use, as secretPatterns.
var envSecret = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?im)^\s*(?:export\s+)?([A-Za-z0-9_.\-]*(?:SECRET|TOKEN|PASSWORD|PASSWD|PWD|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY|CREDENTIALS?|AUTH)[A-Za-z0-9_.\-]*)\s*[=:]\s*(\S.*)$`)
})

// Credential reports whether content looks like it holds a credential, and
// what kind ("a private key"), for an error message that says why.
func Credential(content string) (what string, found bool) {
	for _, p := range secretPatterns() {
		if p.re.MatchString(content) {
			return p.what, true
		}
	}
	for _, m := range envSecret().FindAllStringSubmatch(content, -1) {
		if looksLikeValue(m[2]) {
			return "a secret assignment (" + m[1] + "=...)", true
		}
	}
	return "", false
}

// looksLikeValue tells a real secret value from a placeholder or a reference
// (${VAR}, <your-key>, "", xxx, changeme, os.Getenv(...)).
func looksLikeValue(v string) bool {
	v = strings.TrimSpace(v)
	v = strings.Trim(v, `"'`+"`")
	if len(v) < 8 || strings.ContainsAny(v[:1], "$<{(%") {
		return false
	}
	l := strings.ToLower(v)
	for _, p := range []string{"xxx", "changeme", "placeholder", "your_", "your-", "<", "example", "redacted", "***", "getenv", "environ", "process.env", "secretkeyref", "vault:"} {
		if strings.Contains(l, p) {
			return false
		}
	}
	// Prose ("the API token is rotated every week") is not a value.
	return !strings.Contains(v, " ")
}
