package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpwarden/mcpwarden/internal/spelling"
	"github.com/mcpwarden/mcpwarden/proxy"
	"github.com/mcpwarden/mcpwarden/proxy/connect"
	"github.com/mcpwarden/mcpwarden/rules"
)

// ParseCall reads a request written by hand, as check and test take it:
// name is canonical (mcp:<server>:<tool>, or a request kind mcpwarden
// decides such as mcp:fs:resources/read), args its arguments as
// jsonargs.Parse gives them. The arguments of a network/connect request
// are read as the egress proxy reads them (connect.Args). It does not
// check that the config has the server: see Setup.CheckServer.
func ParseCall(name string, args map[string]any) (rules.Call, error) {
	rest, ok := strings.CutPrefix(name, "mcp:")
	server, tool, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || server == "" || tool == "" {
		return rules.Call{}, fmt.Errorf("tool %q: want a canonical name mcp:<server>:<tool>", name)
	}
	if strings.Contains(tool, "/") && !slices.Contains(proxy.RequestKinds(), tool) {
		return rules.Call{}, fmt.Errorf("%q: %q is not a tool name (tool names have no \"/\") nor a request kind mcpwarden decides (%s)", name, tool, strings.Join(proxy.RequestKinds(), ", "))
	}
	if args == nil {
		args = map[string]any{}
	}
	if tool == rules.ToolConnect {
		var err error
		if args, err = connect.Args(args); err != nil {
			return rules.Call{}, err
		}
	}
	return rules.Call{Server: server, Tool: tool, Arguments: args}, nil
}

// CheckServer returns nil if the config has server, else an error naming
// the servers it has and the one meant.
func (s *Setup) CheckServer(server string) error {
	if _, ok := s.Config.Servers[server]; ok {
		return nil
	}
	names := s.Config.ServerNames()
	err := fmt.Errorf("no server %q in the config %s; servers: %s", server, s.Config.File, strings.Join(names, ", "))
	if meant := spelling.Closest(server, names); meant != "" {
		err = fmt.Errorf("%w; did you mean mcp:%s:...?", err, meant)
	}
	return err
}

// CheckProfile returns nil if the config has the client profile, else an
// error that starts with the profile's name quoted (for the caller to
// say where it was written: `--profile "cj": …`) and names the profiles
// there are and the one meant.
func (s *Setup) CheckProfile(profile string) error {
	if _, ok := s.Config.Profiles[profile]; ok {
		return nil
	}
	names := slices.Sorted(maps.Keys(s.Config.Profiles))
	if len(names) == 0 {
		return fmt.Errorf("%q: the config %s has no profiles; define it under profiles: (see docs/teams.md), or drop it", profile, s.Config.File)
	}
	err := fmt.Errorf("%q: the config has no such profile; profiles: %s", profile, strings.Join(names, ", "))
	if meant := spelling.Closest(profile, names); meant != "" {
		err = fmt.Errorf("%w; did you mean %q?", err, meant)
	}
	return err
}

// Armed returns labels as armed by an earlier request of the session
// (check's --after, a test case's after). A label the policy does not
// define is an error that starts with its name quoted, as CheckProfile's.
func (s *Setup) Armed(labels []string) ([]rules.Arming, error) {
	var out []rules.Arming
	for _, l := range labels {
		if !s.Policy.HasLabel(l) {
			err := fmt.Errorf("%q: the config defines no such label under labels", l)
			names := s.Policy.LabelNames()
			switch meant := spelling.Closest(l, names); {
			case meant != "":
				err = fmt.Errorf("%w; did you mean %q?", err, meant)
			case len(names) > 0:
				err = fmt.Errorf("%w; its labels are %s", err, strings.Join(names, ", "))
			}
			return nil, err
		}
		out = append(out, rules.Arming{Label: l})
	}
	return out, nil
}
