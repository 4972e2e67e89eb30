/*
 * logberg's pod sandbox process: holds the pod's namespaces open and does nothing else.
 * It runs as PID 1 of the sandbox, so it reaps any orphan that ends up in its PID namespace
 * (pods with shareProcessNamespace), and it exits at once on SIGINT/SIGTERM so that stopping
 * a pod never waits for a kill timeout. Built static: the image needs no libc.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void reap(int sig)
{
	int saved = errno;
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

static int on(int sig, void (*handler)(int), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		puts("logberg-pause 1");
		return 0;
	}
	if (getpid() != 1)
		fputs("logberg-pause: not PID 1; orphans of this namespace are not reaped here\n", stderr);
	if (on(SIGINT, stop, 0) || on(SIGTERM, stop, 0) ||
	    on(SIGCHLD, reap, SA_NOCLDSTOP | SA_RESTART)) {
		perror("logberg-pause: sigaction");
		return 1;
	}
	for (;;)
		pause();
}
