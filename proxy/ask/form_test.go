package ask

import (
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/state"
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
		want state.Answer
	}{
		{"an allow the form did not offer is no answer", accept("allow_session"), state.None},
		{"a value no form offers is no answer", accept("allow_everything"), state.None},
		{"a choice of the wrong type is no answer", accept(true), state.None},
		{"an empty accept is no answer", accept(""), state.None},
		{"a cancel is no answer", &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionCancel}}, state.None},
		{"an unknown action is no answer", &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: "approve"}}, state.None},
		{"no result is no answer", nil, state.None},
		{"a decline denies", &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, state.Deny},
		{"an offered choice decides", accept("deny_session"), state.DenySession},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, why := AnswerOf(tt.res, denials)
			if got != tt.want {
				t.Errorf("AnswerOf = %v (%s), want %v", got, why, tt.want)
			}
			if got == state.None && why == "" {
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
		case got == state.None:
		case got == state.Deny && action == string(mcp.ElicitationResponseActionDecline):
		case action == string(mcp.ElicitationResponseActionAccept) && slices.Contains(offered, decision) && got == Choice(decision):
		default:
			t.Fatalf("action %q, decision %q gave %v", action, decision, got)
		}
	})
}
