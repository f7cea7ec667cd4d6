package authz

import "testing"

// The built-in rules' examples are not checked when toold starts (they are
// compiled in); this test checks them, as for any policy file.
func TestBuiltinExamples(t *testing.T) {
	checkBuiltinExamples = true
	defer func() { checkBuiltinExamples = false }()
	if _, err := parsePolicy(builtinYAML, "yaml", "builtin", "builtin:"); err != nil {
		t.Fatal(err)
	}
}

func TestDangerClassExamples(t *testing.T) {
	checkBuiltinExamples = true
	defer func() { checkBuiltinExamples = false }()
	p, err := parsePolicy(classesYAML, "yaml", "builtin", "builtin:")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.rules) == 0 {
		t.Fatal("no dangerous classes")
	}
}
