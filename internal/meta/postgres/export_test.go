package postgres

// Migrations are the embedded migrations, for tests that apply part of them.
var Migrations = migrations
