-- luacheck settings for Rota's Lua (run through `npm run lint:lua`, see scripts/lint-lua.mjs):
-- the scripts run in Redis 7's Lua 5.1, with Redis's libraries as globals.
std = 'lua51'
read_globals = { 'redis', 'cjson', 'cmsgpack', 'struct', 'bit' }
max_line_length = 160
-- (every script is a function of KEYS and ARGV, and not every one reads both)
ignore = { '212/KEYS', '212/ARGV' }
