"""Working examples of the three ways to bring an agent (README, "Bring your own agent")."""
