package hosts

// table is every MCP host remotemcp can connect, one row each. Adding a
// host is a row here and a fixture directory in testdata/ (see
// TestFixtures); the code that applies a row is generic.
//
// Paths are templates: a leading $VAR is the variable's value ($HOME is
// System.Home, the others come from System.Env), the rest is
// '/'-separated and joined with the OS's separator. The first candidate
// whose variable is set (to an absolute path) is the file.
var table = []Host{
	{
		ID:         "claude-desktop",
		Name:       "Claude Desktop",
		Format:     FormatJSON,
		ServersKey: "mcpServers",
		User: PerOS{
			// No official Linux build: this is where the community
			// builds (Electron's userData directory) read it.
			Linux:   []string{"$XDG_CONFIG_HOME/Claude/claude_desktop_config.json", "$HOME/.config/Claude/claude_desktop_config.json"},
			Darwin:  []string{"$HOME/Library/Application Support/Claude/claude_desktop_config.json"},
			Windows: []string{"$APPDATA/Claude/claude_desktop_config.json", "$HOME/AppData/Roaming/Claude/claude_desktop_config.json"},
		},
		Notes: map[string]string{
			"linux": "Claude Desktop has no official Linux build; this is the file the community builds read",
		},
		Docs: "https://modelcontextprotocol.io/docs/develop/connect-local-servers",
		// Claude Desktop reads only local (stdio) servers from this file;
		// remote ones are custom connectors added in Settings →
		// Connectors, which Anthropic's cloud connects to, so they
		// cannot reach a loopback endpoint anyway.
		NoRemote: "Claude Desktop reads only local (stdio) servers from claude_desktop_config.json (remote servers are connectors in its settings, reached from Anthropic's cloud, which cannot reach this machine's loopback address): run \"remotemcp hosts connect claude-desktop\" without --http, which connects it to the same servers through stdio",
	},
	{
		ID:         "claude-code",
		Name:       "Claude Code",
		Format:     FormatJSON,
		ServersKey: "mcpServers",
		EntryType:  "stdio",
		// ~/.claude.json is Claude Code's live state; only its top-level
		// mcpServers (user scope) is edited.
		User: PerOS{
			Linux:   []string{"$CLAUDE_CONFIG_DIR/.claude.json", "$HOME/.claude.json"},
			Darwin:  []string{"$CLAUDE_CONFIG_DIR/.claude.json", "$HOME/.claude.json"},
			Windows: []string{"$CLAUDE_CONFIG_DIR/.claude.json", "$HOME/.claude.json"},
		},
		// ~/.claude.json sits in the home directory, which always exists.
		Installed: PerOS{
			Linux:   []string{"$CLAUDE_CONFIG_DIR", "$HOME/.claude"},
			Darwin:  []string{"$CLAUDE_CONFIG_DIR", "$HOME/.claude"},
			Windows: []string{"$CLAUDE_CONFIG_DIR", "$HOME/.claude"},
		},
		Project: ".mcp.json",
		Docs:    "https://docs.anthropic.com/en/docs/claude-code/mcp",
		// "claude mcp add --transport http NAME URL --header …" writes
		// {"type": "http", "url", "headers"}.
		Remote: &Remote{Type: "http", URLKey: "url", HeadersKey: "headers"},
	},
	{
		ID:         "cursor",
		Name:       "Cursor",
		Format:     FormatJSONC,
		ServersKey: "mcpServers",
		User: PerOS{
			Linux:   []string{"$HOME/.cursor/mcp.json"},
			Darwin:  []string{"$HOME/.cursor/mcp.json"},
			Windows: []string{"$HOME/.cursor/mcp.json"},
		},
		Project: ".cursor/mcp.json",
		Docs:    "https://docs.cursor.com/context/model-context-protocol",
		// A remote server is {"url", "headers"}, without a type.
		Remote: &Remote{URLKey: "url", HeadersKey: "headers"},
	},
	{
		ID:         "vscode",
		Name:       "VS Code",
		Format:     FormatJSONC,
		ServersKey: "servers",
		EntryType:  "stdio",
		User: PerOS{
			Linux:   []string{"$XDG_CONFIG_HOME/Code/User/mcp.json", "$HOME/.config/Code/User/mcp.json"},
			Darwin:  []string{"$HOME/Library/Application Support/Code/User/mcp.json"},
			Windows: []string{"$APPDATA/Code/User/mcp.json", "$HOME/AppData/Roaming/Code/User/mcp.json"},
		},
		Project: ".vscode/mcp.json",
		Docs:    "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
		// {"type": "http", "url", "headers"} under "servers".
		Remote: &Remote{Type: "http", URLKey: "url", HeadersKey: "headers"},
	},
	{
		ID:         "windsurf",
		Name:       "Windsurf",
		Format:     FormatJSONC,
		ServersKey: "mcpServers",
		User: PerOS{
			Linux:   []string{"$HOME/.codeium/windsurf/mcp_config.json"},
			Darwin:  []string{"$HOME/.codeium/windsurf/mcp_config.json"},
			Windows: []string{"$HOME/.codeium/windsurf/mcp_config.json"},
		},
		Docs: "https://docs.windsurf.com/windsurf/cascade/mcp",
		// Windsurf names a remote server's URL "serverUrl".
		Remote: &Remote{URLKey: "serverUrl", HeadersKey: "headers"},
	},
	{
		ID:         "codex",
		Name:       "Codex",
		Format:     FormatTOML,
		ServersKey: "mcp_servers",
		User: PerOS{
			Linux:   []string{"$CODEX_HOME/config.toml", "$HOME/.codex/config.toml"},
			Darwin:  []string{"$CODEX_HOME/config.toml", "$HOME/.codex/config.toml"},
			Windows: []string{"$CODEX_HOME/config.toml", "$HOME/.codex/config.toml"},
		},
		Project:     ".codex/config.toml",
		ProjectNote: "Codex reads a project's .codex/config.toml only in a trusted project",
		Docs:        "https://developers.openai.com/codex/mcp",
		// A Streamable HTTP server is "url" with literal headers in
		// "http_headers" (a "headers" key is ignored by Codex; its other
		// ways, bearer_token_env_var and env_http_headers, need a
		// variable the user would have to export for Codex).
		Remote: &Remote{URLKey: "url", HeadersKey: "http_headers"},
	},
	{
		ID:         "gemini-cli",
		Name:       "Gemini CLI",
		Format:     FormatJSONC,
		ServersKey: "mcpServers",
		User: PerOS{
			Linux:   []string{"$HOME/.gemini/settings.json"},
			Darwin:  []string{"$HOME/.gemini/settings.json"},
			Windows: []string{"$HOME/.gemini/settings.json"},
		},
		Project: ".gemini/settings.json",
		Docs:    "https://geminicli.com/docs/tools/mcp-server/",
		// "httpUrl" is Streamable HTTP ("url" would be SSE).
		Remote: &Remote{URLKey: "httpUrl", HeadersKey: "headers"},
	},
}
