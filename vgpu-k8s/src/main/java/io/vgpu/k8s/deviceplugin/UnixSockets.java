package io.vgpu.k8s.deviceplugin;

import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * gRPC over unix domain sockets, the transport kubelet speaks to device plugins. Uses the epoll
 * transport bundled in grpc-netty-shaded (Linux only, which is where kubelet runs). Every server and
 * channel shares one small pool of daemon event-loop threads for the life of the process: the agent
 * holds a handful of sockets, none busy, so a pool each would only add threads to shut down.
 */
public final class UnixSockets {
  private UnixSockets() {}

  /** The shared event loops, created on first use. */
  private static final class Loops {
    static final EventLoopGroup GROUP = new EpollEventLoopGroup(2, new DefaultThreadFactory("vgpu-uds", true));
  }

  /**
   * Serves services on a socket file, replacing a stale file left by an earlier run.
   *
   * @throws IOException when the socket cannot be bound or epoll is unavailable
   */
  public static Server serve(Path socket, BindableService... services) throws IOException {
    requireEpoll();
    Files.deleteIfExists(socket);
    NettyServerBuilder builder =
        NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
            .channelType(EpollServerDomainSocketChannel.class)
            .bossEventLoopGroup(Loops.GROUP)
            .workerEventLoopGroup(Loops.GROUP);
    for (BindableService service : services) {
      builder.addService(service);
    }
    return builder.build().start();
  }

  /** A plaintext channel to a socket file. */
  public static ManagedChannel connect(Path socket) {
    requireEpoll();
    return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollDomainSocketChannel.class)
        .eventLoopGroup(Loops.GROUP)
        .usePlaintext()
        .build();
  }

  private static void requireEpoll() {
    if (!Epoll.isAvailable()) {
      throw new IllegalStateException("unix-socket gRPC needs Linux epoll: " + Epoll.unavailabilityCause().getMessage());
    }
  }
}
