# Calling NotifiableServer from Ruby with the standard library alone.
#
#   require_relative "notifiable"
#   status, body = Notifiable.request("POST", "https://push.example.com", "/api/v1/notifications",
#                                     { message: "Hello", user_aliases: ["alice"] }, ACCESS_ID, SECRET_KEY)
#
# Signs as the api_auth gem does (README, Authentication): HMAC-SHA1 over
# `METHOD,Content-Type,X-Authorization-Content-SHA256,path,Date`, the body covered by its SHA-256
# on POST, PUT and PATCH (server credentials must; device credentials may). With the api_auth gem
# itself (2.5 or later), ApiAuth.sign!(request, access_id, secret_key) does the same for POST and PUT.
require "json"
require "net/http"
require "openssl"
require "time"
require "uri"

module Notifiable
  CONTENT_TYPE = "application/json; charset=utf-8"

  def self.base64(bytes) = [bytes].pack("m0")

  def self.signed_headers(method, path, body, access_id, secret_key)
    method = method.upcase
    date = Time.now.httpdate
    headers = { "Date" => date, "Content-Type" => CONTENT_TYPE }
    content_hash = ""
    if %w[POST PUT PATCH].include?(method)
      content_hash = base64(OpenSSL::Digest::SHA256.digest(body))
      headers["X-Authorization-Content-SHA256"] = content_hash
    end
    canonical = [method, CONTENT_TYPE, content_hash, path.split("?", 2).first, date].join(",")
    headers["Authorization"] = "APIAuth #{access_id}:#{base64(OpenSSL::HMAC.digest("SHA1", secret_key, canonical))}"
    headers
  end

  def self.request(method, base_url, path, body, access_id, secret_key)
    data = body.nil? ? "" : (body.is_a?(String) ? body : JSON.generate(body))
    uri = URI(base_url.chomp("/") + path)
    outgoing = Net::HTTPGenericRequest.new(method.upcase, !data.empty?, true, uri.request_uri)
    signed_headers(method, path, data, access_id, secret_key).each { |name, value| outgoing[name] = value }
    outgoing.body = data unless data.empty?
    answer = Net::HTTP.start(uri.host, uri.port, use_ssl: uri.scheme == "https", open_timeout: 5, read_timeout: 30) do |http|
      http.request(outgoing)
    end
    parsed = begin
      answer.body.to_s.empty? ? nil : JSON.parse(answer.body)
    rescue JSON::ParserError
      answer.body
    end
    [answer.code.to_i, parsed]
  end

  def self.verify_webhook(header, body, secret, tolerance: 300, now: Time.now.to_i)
    timestamp = nil
    signatures = []
    header.split(",").each do |part|
      key, value = part.strip.split("=", 2)
      timestamp = Integer(value, exception: false) if key == "t"
      signatures << value.to_s.downcase if key == "sha256"
    end
    return false if timestamp.nil? || (now - timestamp).abs > tolerance
    expected = OpenSSL::HMAC.hexdigest("SHA256", secret, "#{timestamp}.#{body}")
    signatures.any? { |given| given.bytesize == expected.bytesize && OpenSSL.fixed_length_secure_compare(given, expected) }
  end
end

# ruby notifiable.rb request METHOD BASE_URL PATH [BODY]   (NOTIFIABLE_ACCESS_ID, NOTIFIABLE_SECRET_KEY)
# ruby notifiable.rb verify-webhook SECRET HEADER BODY_FILE
if $PROGRAM_NAME == __FILE__
  case ARGV[0]
  when "request"
    method, base_url, path, body = ARGV[1..4]
    status, answer = Notifiable.request(method, base_url, path, body, ENV.fetch("NOTIFIABLE_ACCESS_ID"), ENV.fetch("NOTIFIABLE_SECRET_KEY"))
    warn status.to_s
    puts JSON.generate(answer)
    exit(status < 400 ? 0 : 1)
  when "verify-webhook"
    exit(Notifiable.verify_webhook(ARGV[2], File.binread(ARGV[3]), ARGV[1]) ? 0 : 1)
  else
    abort "usage: notifiable.rb request METHOD BASE_URL PATH [BODY] | verify-webhook SECRET HEADER BODY_FILE"
  end
end
