package ask

import (
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcpwarden/mcpwarden/internal/state"
	"github.com/mcpwarden/mcpwarden/internal/textcut"
)

// AnswerOf reads the form's answer. Only an accept with one of the offered
// choices decides, and a decline is a deny; anything else (cancel, an
// empty accept, a value not offered) is no answer, with why saying which.
func AnswerOf(res *mcp.ElicitationResult, offered []string) (ans state.Answer, why string) {
	switch {
	case res == nil:
		return state.None, "the client returned no answer"
	case res.Action == mcp.ElicitationResponseActionDecline:
		return state.Deny, ""
	case res.Action == mcp.ElicitationResponseActionCancel:
		return state.None, "the client cancelled the form"
	case res.Action != mcp.ElicitationResponseActionAccept:
		return state.None, fmt.Sprintf("the client answered the form with action %q", res.Action)
	}
	content, _ := res.Content.(map[string]any)
	s, _ := content["decision"].(string)
	if s == "" {
		return state.None, "the client accepted the form without a choice"
	}
	for _, o := range offered {
		if o == s {
			return Choice(s), ""
		}
	}
	return state.None, fmt.Sprintf("the client answered %q, which is not a choice of the form", textcut.Tail(s, 40))
}

// DecisionForm is an approval form: message, and one required "decision"
// field whose choices are values, shown as names.
func DecisionForm(message, description string, values, names []string) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Message: message,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{
					"type":        "string",
					"title":       "Decision",
					"description": description,
					"enum":        values,
					"enumNames":   names,
				},
			},
			"required": []string{"decision"},
		},
	}
}
