"""The local server: a replay proxy any agent points its base URL at, the diff as a
service, and a web view of runs."""
