/* The probe's reserve op: what KAI's resource-reservation container does (kai.md §1.6), so the lab's
 * reservation pods run the real sequence over the mock driver. NVML init; exactly one visible device
 * (else KAI's "found N devices, 1 was expected"); the UUID of device 0; then a JSON merge patch of the
 * container's own pod, annotation run.ai/reserve_for_gpu_index = that UUID, sent to the API server
 * (KUBERNETES_SERVICE_HOST/PORT, plain HTTP as the lab's API server speaks) with the pod's ServiceAccount
 * token from its standard mount, the pod named by POD_NAMESPACE/POD_NAME as KAI's binder sets them.
 * Any failure is KAI's "Error while running the app: ..." on stderr and exit 1, as the real one exits. */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "nvml_types.h"
#include "probe/probe.h"

#define TOKEN_FILE "/var/run/secrets/kubernetes.io/serviceaccount/token"
#define ANNOTATION "run.ai/reserve_for_gpu_index"

static void fail(const char *format, const char *detail, int result) {
    char message[512];
    snprintf(message, sizeof message, format, detail);
    probe_note("Error while running the app: %s", message);
    probe_emit("\"op\":\"reserve\",\"result\":%d", result);
    probe_ops_complete();
    exit(1);
}

static int read_token(char *token, size_t size) {
    FILE *f = fopen(TOKEN_FILE, "r");
    if (f == NULL) return -1;
    size_t n = fread(token, 1, size - 1, f);
    fclose(f);
    token[n] = '\0';
    while (n > 0 && (token[n - 1] == '\n' || token[n - 1] == ' ')) token[--n] = '\0';
    return n > 0 ? 0 : -1;
}

/* Sends the request and returns the HTTP status, or -1 when the server cannot be reached. */
static int http_patch(const char *host, const char *port, const char *path, const char *token, const char *body) {
    struct addrinfo hints = {0}, *addresses = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &addresses) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *a = addresses; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(addresses);
    if (fd < 0) return -1;
    char request[8192];
    int length = snprintf(request, sizeof request,
                          "PATCH %s HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: Bearer %s\r\n"
                          "Content-Type: application/merge-patch+json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                          path, host, port, token, strlen(body), body);
    if (length <= 0 || (size_t)length >= sizeof request) {
        close(fd);
        return -1;
    }
    for (int sent = 0; sent < length;) {
        ssize_t n = write(fd, request + sent, (size_t)(length - sent));
        if (n <= 0) {
            close(fd);
            return -1;
        }
        sent += (int)n;
    }
    char response[64] = "", rest[1024];
    size_t got = 0;
    while (got < sizeof response - 1) {
        ssize_t n = read(fd, response + got, sizeof response - 1 - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    while (read(fd, rest, sizeof rest) > 0) {
        /* the rest of the answer, read so the server sees an orderly close */
    }
    close(fd);
    response[got] = '\0';
    int status = -1;
    if (sscanf(response, "HTTP/1.%*d %d", &status) != 1) return -1;
    return status;
}

void probe_reserve(void) {
    nvmlReturn_t result = nvmlInit_v2();
    if (result != NVML_SUCCESS) fail("unable to initialize NVML: %s", nvmlErrorString(result), (int)result);
    unsigned count = 0;
    if ((result = nvmlDeviceGetCount_v2(&count)) != NVML_SUCCESS) fail("unable to get device count: %s", nvmlErrorString(result), (int)result);
    if (count != 1) {
        char found[32];
        snprintf(found, sizeof found, "%u", count);
        fail("found %s devices, 1 was expected", found, -1);
    }
    nvmlDevice_t device = NULL;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
    if ((result = nvmlDeviceGetHandleByIndex_v2(0, &device)) != NVML_SUCCESS || (result = nvmlDeviceGetUUID(device, uuid, sizeof uuid)) != NVML_SUCCESS)
        fail("unable to get the device's UUID: %s", nvmlErrorString(result), (int)result);
    nvmlShutdown();

    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    const char *ns = getenv("POD_NAMESPACE"), *name = getenv("POD_NAME");
    if (host == NULL || port == NULL || ns == NULL || name == NULL || !*host || !*port || !*ns || !*name)
        fail("%s", "KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT, POD_NAMESPACE and POD_NAME must be set", -1);
    char token[4096];
    if (read_token(token, sizeof token) != 0) fail("cannot read the ServiceAccount token %s", TOKEN_FILE, -1);
    char path[512], body[512], uuid_json[2 * NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    probe_json_text(uuid, uuid_json, sizeof uuid_json);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    snprintf(body, sizeof body, "{\"metadata\":{\"annotations\":{\"" ANNOTATION "\":\"%s\"}}}", uuid_json);
    int status = http_patch(host, port, path, token, body);
    if (status != 200) {
        char detail[64];
        snprintf(detail, sizeof detail, "%d", status);
        fail("patching the pod's annotation failed: HTTP status %s", detail, status);
    }
    probe_emit("\"op\":\"reserve\",\"result\":0,\"uuid\":\"%s\"", uuid_json);
}
