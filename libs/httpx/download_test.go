package httpx

import "testing"

func TestContentDisposition(t *testing.T) {
	tests := []struct{ disp, name, want string }{
		{"inline", "guide.pdf", `inline; filename="guide.pdf"`},
		{"attachment", "résumé.pdf", `attachment; filename="r_sum_.pdf"; filename*=utf-8''r%C3%A9sum%C3%A9.pdf`},
		{"attachment", "a\"b\r\n.md", `attachment; filename="a_b__.md"`},
		{"attachment", "", `attachment; filename="file"`},
	}
	for _, tt := range tests {
		if got := ContentDisposition(tt.disp, tt.name); got != tt.want {
			t.Errorf("ContentDisposition(%q, %q) = %s, want %s", tt.disp, tt.name, got, tt.want)
		}
	}
}
