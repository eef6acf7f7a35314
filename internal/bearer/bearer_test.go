package bearer

import "testing"

func TestBearer(t *testing.T) {
	tok, hash := New()
	tok2, _ := New()
	if len(tok) != 64 || tok == tok2 || hash != Hash(tok) || hash == tok {
		t.Fatalf("New: %q %q %q", tok, tok2, hash)
	}
	if !Matches(tok, hash) || Matches(tok2, hash) || Matches("", hash) || Matches(tok, "") || Matches("", Hash("")) {
		t.Fatal("Matches")
	}
}
