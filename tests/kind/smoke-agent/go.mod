module jobhandlers.local/kind/smoke-agent

go 1.24
