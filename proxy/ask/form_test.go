package ask

import (
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestFormAnswerOnlyDecidesWithAChoiceTheFormOffered(t *testing.T) {
	t.Parallel()
	denials := []string{"deny", "deny_session"} // a form that had to cut something
	accept := func(v any) *mcp.ElicitationResult {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": v}}}
	}
	tests := []struct {
		name string
		res  *mcp.ElicitationResult
		want Answer
	}{
		{"an allow the form did not offer is no answer", accept("allow_session"), None},
		{"a value no form offers is no answer", accept("allow_everything"), None},
		{"a choice of the wrong type is no answer", accept(true), None},
		{"an empty accept is no answer", accept(""), None},
		{"a cancel is no answer", &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionCancel}}, None},
		{"an unknown action is no answer", &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "approve"}}, None},
		{"no result is no answer", nil, None},
		{"a decline denies", &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, Deny},
		{"an offered choice decides", accept("deny_session"), DenySession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, why := AnswerOf(tt.res, denials)
			if got != tt.want {
				t.Errorf("AnswerOf = %v (%s), want %v", got, why, tt.want)
			}
			if got == None && why == "" {
				t.Error("no answer without saying why")
			}
		})
	}
}

// FuzzAnswerOf feeds the client's answer to a form: whatever it sends,
// the answer is a choice the form offered, a deny (decline), or none.
func FuzzAnswerOf(f *testing.F) {
	f.Add("accept", "allow_once")
	f.Add("accept", "allow_session")
	f.Add("decline", "")
	f.Add("cancel", "deny")
	f.Add("accept", "allow_once\x00")
	offered := []string{"allow_once", "deny", "deny_session"}
	f.Fuzz(func(t *testing.T, action, decision string) {
		res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseAction(action), Content: map[string]any{"decision": decision}}}
		got, _ := AnswerOf(res, offered)
		switch {
		case got == None:
		case got == Deny && action == string(mcp.ElicitationResponseActionDecline):
		case action == string(mcp.ElicitationResponseActionAccept) && slices.Contains(offered, decision) && got == Choice(decision):
		default:
			t.Fatalf("action %q, decision %q gave %v", action, decision, got)
		}
	})
}
