// The tail benchmark's load generator (scripts/bench_tail.ts compiles it with cc): one thread,
// N keep-alive connections, the benign GETs of bench_proxy.ts, and every request's send time and
// latency recorded, which wrk does not give.
//
//   latency_recorder host port hostheader connections seconds cycle_us mode out.txt
//
// open:       each connection sends on its own fixed schedule (cycle_us apart, random phase) and
//             a latency counts from the scheduled time, so a stall is not hidden by the client
//             waiting (no coordinated omission).
// closed:     after a response, wait cycle_us, then send (wrk's delay()).
// closedrand: the same with a uniformly random wait of mean cycle_us.
// Each line of out.txt: scheduled-or-sent wall time (µs), latency (µs), time since the actual
// send (µs), connection, status.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t now_us(void) {
  struct timespec t; clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}
typedef struct { int fd; int busy; int64_t sched, sent; char buf[65536]; int len; int req; } conn;
static const char *paths[] = {"/index.html", "/products?id=42&sort=price&page=2",
  "/search?q=how+to+select+the+union+of+two+sets+and+drop+duplicates", "/static/app.js?v=1.4.2"};
int main(int argc, char **argv) {
  if (argc < 9) { fprintf(stderr, "usage\n"); return 2; }
  const char *host = argv[1]; int port = atoi(argv[2]); const char *hh = argv[3];
  int n = atoi(argv[4]); double secs = atof(argv[5]); int64_t cycle = atoll(argv[6]);
  int open_loop = strcmp(argv[7], "open") == 0; int rnd = strcmp(argv[7], "closedrand") == 0; FILE *out = fopen(argv[8], "w");
  conn *c = calloc(n, sizeof(conn)); struct pollfd *pf = calloc(n, sizeof(struct pollfd));
  char reqs[4][1024]; int rl[4];
  for (int i = 0; i < 4; i++) rl[i] = snprintf(reqs[i], 1024,
    "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36\r\n"
    "Accept: text/html,application/json;q=0.9,*/*;q=0.8\r\nCookie: session=4f2a9c1e7b; theme=dark\r\n\r\n", paths[i], hh);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)}; inet_pton(AF_INET, host, &a.sin_addr);
  int64_t start = now_us(); srand(start);
  for (int i = 0; i < n; i++) {
    c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c[i].fd, (void *)&a, sizeof a)) { perror("connect"); return 1; }
    int one = 1; setsockopt(c[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(c[i].fd, F_SETFL, O_NONBLOCK);
    c[i].sched = start + 200000 + (int64_t)((double)rand() / RAND_MAX * cycle);
    c[i].req = i;
  }
  int64_t end = start + 200000 + (int64_t)(secs * 1e6); long total = 0, late = 0;
  for (;;) {
    int64_t t = now_us(); if (t >= end) break;
    int64_t next = end;
    for (int i = 0; i < n; i++) {
      if (!c[i].busy && c[i].sched <= t) {
        int k = c[i].req++ % 4;
        c[i].sent = t; c[i].busy = 1; c[i].len = 0;
        if (write(c[i].fd, reqs[k], rl[k]) != rl[k]) { perror("write"); return 1; }
      }
      if (!c[i].busy && c[i].sched < next) next = c[i].sched;
      pf[i].fd = c[i].fd; pf[i].events = c[i].busy ? POLLIN : 0;
    }
    int64_t wait = next - now_us(); if (wait < 0) wait = 0;
    struct timespec ts = {wait / 1000000, (wait % 1000000) * 1000};
    int r = ppoll(pf, n, &ts, NULL);
    if (r < 0 && errno != EINTR) { perror("poll"); return 1; }
    if (r <= 0) continue;
    for (int i = 0; i < n; i++) {
      if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t m = read(c[i].fd, c[i].buf + c[i].len, sizeof c[i].buf - c[i].len - 1);
      if (m <= 0) { fprintf(stderr, "conn %d closed\n", i); return 1; }
      c[i].len += m; c[i].buf[c[i].len] = 0;
      char *he = strstr(c[i].buf, "\r\n\r\n"); if (!he) continue;
      char *cl = strcasestr(c[i].buf, "\ncontent-length:");
      int body = he + 4 - c[i].buf;
      if (cl && cl < he) { if (c[i].len < body + atoi(cl + 16)) continue; }
      else if (!strstr(he, "0\r\n\r\n")) continue;
      int64_t done = now_us();
      int64_t from = open_loop ? c[i].sched : c[i].sent;
      fprintf(out, "%lld %lld %lld %d %d\n", (long long)from, (long long)(done - from), (long long)(done - c[i].sent), i, atoi(c[i].buf + 9));
      total++;
      c[i].busy = 0;
      if (open_loop) { c[i].sched += cycle; if (c[i].sched < done) late++; }
      else c[i].sched = done + (rnd ? (int64_t)((double)rand() / RAND_MAX * 2 * cycle) : cycle);
    }
  }
  fclose(out);
  fprintf(stderr, "requests %ld in %.1f s: %.0f req/s, sent late %ld\n", total, secs, total / secs, late);
  return 0;
}
