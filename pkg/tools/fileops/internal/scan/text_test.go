package scan

import "testing"

func TestCutLine(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		total     int
		max       int
		want      string
		wantShown int
		wantCut   bool
	}{
		{"short", "hello", 5, 10, "hello", 5, false},
		{"exact", "hello", 5, 5, "hello", 5, false},
		{"cut", "hello world", 11, 5, "hello … [line cut: 6 more bytes]", 5, true},
		{"runes", "héllo wörld", 13, 5, "héllo … [line cut: 7 more bytes]", 6, true},
		{"multibyte fits", "ééé", 6, 3, "ééé", 6, false},
		{"head of longer line", "abc", 1000, 5, "abc … [line cut: 997 more bytes]", 3, true},
		{"invalid utf8", "a\xffb", 3, 10, "a\uFFFDb", 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, shown, cut := CutLine([]byte(tt.line), tt.total, tt.max)
			if got != tt.want || shown != tt.wantShown || cut != tt.wantCut {
				t.Errorf("CutLine = %q, %d, %v; want %q, %d, %v", got, shown, cut, tt.want, tt.wantShown, tt.wantCut)
			}
		})
	}
}
