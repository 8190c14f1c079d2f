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
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * gRPC over unix domain sockets, the transport kubelet speaks to device plugins. Uses the epoll
 * transport bundled in grpc-netty-shaded (Linux only, which is where kubelet runs).
 */
public final class UnixSockets {
  private UnixSockets() {}

  /**
   * Serves services on a socket file, replacing a stale file left by an earlier run.
   *
   * @throws IOException when the socket cannot be bound or epoll is unavailable
   */
  public static Server serve(Path socket, BindableService... services) throws IOException {
    requireEpoll();
    Files.deleteIfExists(socket);
    EventLoopGroup boss = new EpollEventLoopGroup(1);
    EventLoopGroup workers = new EpollEventLoopGroup(2);
    NettyServerBuilder builder =
        NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
            .channelType(EpollServerDomainSocketChannel.class)
            .bossEventLoopGroup(boss)
            .workerEventLoopGroup(workers);
    for (BindableService service : services) {
      builder.addService(service);
    }
    Server server = builder.build().start();
    return new ServerWithGroups(server, boss, workers);
  }

  /** A plaintext channel to a socket file. */
  public static ManagedChannel connect(Path socket) {
    requireEpoll();
    EventLoopGroup group = new EpollEventLoopGroup(1);
    ManagedChannel channel =
        NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
            .channelType(EpollDomainSocketChannel.class)
            .eventLoopGroup(group)
            .usePlaintext()
            .build();
    return new ChannelWithGroup(channel, group);
  }

  private static void requireEpoll() {
    if (!Epoll.isAvailable()) {
      throw new IllegalStateException("unix-socket gRPC needs Linux epoll: " + Epoll.unavailabilityCause().getMessage());
    }
  }

  /** A server that shuts its event loops down with it. */
  private static final class ServerWithGroups extends Server {
    private final Server delegate;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;

    ServerWithGroups(Server delegate, EventLoopGroup boss, EventLoopGroup workers) {
      this.delegate = delegate;
      this.boss = boss;
      this.workers = workers;
    }

    @Override
    public Server start() throws IOException {
      return this;
    }

    @Override
    public Server shutdown() {
      delegate.shutdown();
      boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      return this;
    }

    @Override
    public Server shutdownNow() {
      delegate.shutdownNow();
      boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      return this;
    }

    @Override
    public boolean isShutdown() {
      return delegate.isShutdown();
    }

    @Override
    public boolean isTerminated() {
      return delegate.isTerminated();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      return delegate.awaitTermination(timeout, unit);
    }

    @Override
    public void awaitTermination() throws InterruptedException {
      delegate.awaitTermination();
    }
  }

  /** A channel that shuts its event loop down with it. */
  private static final class ChannelWithGroup extends ManagedChannel {
    private final ManagedChannel delegate;
    private final EventLoopGroup group;

    ChannelWithGroup(ManagedChannel delegate, EventLoopGroup group) {
      this.delegate = delegate;
      this.group = group;
    }

    @Override
    public ManagedChannel shutdown() {
      delegate.shutdown();
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      return this;
    }

    @Override
    public boolean isShutdown() {
      return delegate.isShutdown();
    }

    @Override
    public boolean isTerminated() {
      return delegate.isTerminated();
    }

    @Override
    public ManagedChannel shutdownNow() {
      delegate.shutdownNow();
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      return this;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      return delegate.awaitTermination(timeout, unit);
    }

    @Override
    public <RequestT, ResponseT> io.grpc.ClientCall<RequestT, ResponseT> newCall(
        io.grpc.MethodDescriptor<RequestT, ResponseT> method, io.grpc.CallOptions options) {
      return delegate.newCall(method, options);
    }

    @Override
    public String authority() {
      return delegate.authority();
    }
  }
}
