// Package scan is the engine of the file tools' directory walks and
// searches (list_dir, glob, grep_search, read_many_files): a parallel
// walker that never follows a symlink out of its start directory (Walker,
// Config, Visitor), .gitignore rules (IgnoreList, CompileGlob), binary
// detection (BinaryKind), and a line searcher with literal prefilters
// (CompileMatcher, Searcher). It knows nothing of tools, policy or errors
// for the model: pkg/tools/fileops turns what it finds into results.
package scan
