-- The top tables at a glance (`make k8s-demo` pipes this into `make sql-k8s`): the newest
-- day's top IPs and device shares, and the weekly summary, as `logberg top` prints them.
SELECT 'top_ips' AS section, date, rank, ip_address, request_count, bytes_sent, is_bot
FROM nginx_logs.daily_top_ips
WHERE date = (SELECT MAX(date) FROM nginx_logs.daily_top_ips)
ORDER BY rank;

SELECT 'device_shares' AS section, date, rank, device_type, request_count, unique_ips,
       ROUND(100 * share, 1) AS share_pct
FROM nginx_logs.daily_top_devices
WHERE date = (SELECT MAX(date) FROM nginx_logs.daily_top_devices)
ORDER BY rank;

SELECT 'weekly' AS section, year, week_of_year, week_start_date, total_requests, unique_ips,
       ROUND(error_rate, 3) AS error_rate, ROUND(bot_share, 3) AS bot_share
FROM nginx_logs.weekly_analytics
ORDER BY year, week_of_year;
