/* The floor for "exec → /healthz answered": a C server that does nothing but answer 200 to every
 * request on PORT, one connection at a time. Benchmarks/compare.py builds it with the system's cc and
 * times it beside Herald's functions in the same run. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
    const char *port = getenv("PORT");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port ? atoi(port) : 8080)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0 || listen(fd, 64) != 0) return 1;
    static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":\"ok\"}";
    char buffer[4096];
    for (;;) {
        int client = accept(fd, NULL, NULL);
        if (client < 0) continue;
        (void)read(client, buffer, sizeof buffer);
        (void)write(client, answer, sizeof answer - 1);
        close(client);
    }
}
