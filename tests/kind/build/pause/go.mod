module jobhandlers.local/kind/pause

go 1.24
