#!/usr/bin/env perl
# A plugin in another language, speaking protocol v1 directly (docs/protocol.md): no SDK involved.
use strict;
use warnings;
use JSON::PP;

$| = 1;
my $json = JSON::PP->new->canonical;
my $protocol = $ENV{RAWPLUG_PROTOCOL} // 1;
while (my $line = <STDIN>) {
    my $msg = eval { $json->decode($line) } or next;
    next unless defined $msg->{method};
    my $method = $msg->{method};
    if ($method eq 'initialize') {
        my $tools = [{ name => 'shout', description => 'Upper-case the text',
                       parameters => { type => 'object', properties => { text => { type => 'string' } } } }];
        print $json->encode({ jsonrpc => '2.0', id => $msg->{id},
                              result => { protocol => $protocol + 0, sdk => 'perl-raw/1', tools => $tools } }), "\n";
        print $json->encode({ jsonrpc => '2.0', method => 'facility/ready', params => { facility => 'perl.upper' } }), "\n";
        print STDERR "perl plugin initialised\n";
    } elsif ($method eq 'tool/invoke') {
        my $text = uc($msg->{params}{arguments}{text} // '');
        print $json->encode({ jsonrpc => '2.0', id => $msg->{id}, result => { content => $text } }), "\n";
    } elsif ($method eq 'shutdown') {
        print $json->encode({ jsonrpc => '2.0', id => $msg->{id}, result => {} }), "\n";
        exit 0;
    } elsif (defined $msg->{id}) {
        print $json->encode({ jsonrpc => '2.0', id => $msg->{id},
                              error => { code => -32601, message => "no method $method" } }), "\n";
    }
}
