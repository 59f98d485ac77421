# The desktop console, Persian, for procurement supervisors.
# Keys are `area-element[-variant]`; en-US/console.ftl has the same keys and variables.
# "Intent" is rendered as «درخواست»: one business outcome, such as one purchase order.

## Top bar

topbar-connection-embedded = نسخهٔ نمایشی داخلی
topbar-connection-remote = متصل به { $url }
topbar-status-live = به‌روز
topbar-status-stale = قدیمی
topbar-tenant = سازمان
topbar-provider = سرویس‌دهنده
topbar-time-range = بازهٔ زمانی
topbar-search = جست‌وجو
topbar-search-hint = شناسهٔ درخواست، کلید اقدام، رسید یا مبلغ
topbar-locale = زبان
topbar-locale-en = English
topbar-locale-fa = فارسی

## Views

view-intents = درخواست‌ها
view-dashboard = داشبورد
view-intent-title = درخواست { $intent }

## Intents table

table-column-intent = درخواست
table-column-state = وضعیت
table-column-tenant = سازمان
table-column-operation = عملیات
table-column-tier = سطح اثر
table-column-attempts = تلاش‌ها
table-column-amplification = تلاش به ازای هر درخواست
table-column-age = مدت
table-column-deadline = تا پایان مهلت
table-column-providers = سرویس‌دهنده‌ها
table-column-receipt = رسید
table-column-created = ایجاد
table-count = { $count } درخواست
table-empty = هیچ درخواستی با این فیلترها پیدا نشد.
table-receipt-none = هنوز رسیدی نیامده

## Intent states

state-new = جدید
state-prepared = آماده
state-authorized = مجوز گرفته
state-executing = در حال اجرا
state-committed = انجام شد
state-rejected = رد شد
state-cancelled = لغو شد
state-expired = مهلت گذشت
state-indeterminate = نتیجه نامعلوم
state-indeterminate-hint = معلوم نیست سامانهٔ مقصد این کار را انجام داده است یا نه. این درخواست شکست نخورده؛ تا وقتی رسید یا مدرک دیگری تکلیفش را روشن کند، در همین وضعیت می‌ماند.
state-paused = متوقف

## Consequence tiers

tier-read = خواندن
tier-compute = محاسبه
tier-proposal = پیشنهاد
tier-write = ثبت و تغییر
tier-financial = مالی

## Filters

filter-all = همه
filter-state = وضعیت
filter-tier = سطح اثر
filter-clear = پاک کردن فیلترها
filter-active = { $count } فیلتر فعال است

## Stale data

stale-banner = ارتباط قطع شده است. آنچه می‌بینید مربوط به { $seconds } ثانیه پیش است و فرمان‌ها تا برقراری دوبارهٔ ارتباط منتظر می‌مانند.
stale-retry = اتصال دوباره

## Commands

command-pause = توقف موقت
command-resume = ازسرگیری
command-reconcile = استعلام نتیجه
command-close = بستن
command-confirm = تأیید
command-cancel = انصراف
command-pause-confirm = { $count } درخواست در { $scope } موقتاً متوقف شود؟ تا ازسرگیری چیزی ارسال نمی‌شود؛ آنچه قبلاً ارسال شده برنمی‌گردد.
command-resume-confirm = { $count } درخواست در { $scope } از سر گرفته شود؟ کار از همان جایی که مانده با همان کلید اقدام ادامه پیدا می‌کند.
command-reconcile-confirm = از سامانهٔ مقصد با کلید اقدام { $key } پرسیده می‌شود که درخواست { $intent } انجام شده است یا نه. چیزی دوباره ارسال نمی‌شود.
command-close-confirm = درخواست { $intent } با نتیجهٔ «{ $disposition }» بسته شود؟ این کار برگشت ندارد و همراه با مدرک شما ثبت می‌شود.
command-close-disposition-committed = انجام شده
command-close-disposition-cancelled = انجام نشده (لغو)
command-close-evidence = مدرک
command-close-evidence-hint = آنچه نتیجه را نشان می‌دهد؛ مثلاً شمارهٔ سند در سامانهٔ ERP
command-dry-run = پیش‌نمایش: این فرمان روی { $count } درخواست اثر می‌گذارد.
command-disabled-role = نقش شما ({ $role }) اجازهٔ این کار را ندارد.
command-disabled-state = وقتی وضعیت درخواست «{ $state }» است، این کار ممکن نیست.
command-done = انجام شد.
command-refused = فرمان پذیرفته نشد: { $reason }

## Errors

error-connection = دسترسی به هماهنگ‌کننده در { $url } ممکن نیست.
error-unauthorized = وارد نشده‌اید یا توکن شما پذیرفته نشد.
error-forbidden = نقش شما اجازهٔ این کار را ندارد.
error-not-found = درخواست { $intent } پیدا نشد.
error-conflict = درخواست در این فاصله تغییر کرده است. دوباره بارگذاری کنید و از نو امتحان کنید.
error-unexpected = مشکلی پیش آمد: { $detail }

## Dates and text

date-gregorian = میلادی: { $date }
text-copy = کپی

## Intents table, filters and top bar
action-copy-id = رونوشت شناسهٔ درخواست
action-copy-key = رونوشت کلید اقدام
command-palette = فهرست فرمان‌ها
command-refresh = تازه‌سازی
command-save-view = ذخیرهٔ نمای کنونی
command-search = جست‌وجو
command-show-dashboard = نمایش داشبورد
command-show-intents = نمایش درخواست‌ها
command-switch-locale = تغییر زبان
field-action-key = کلید اقدام
field-actor = انجام‌دهنده
field-args-hash = چکیدهٔ آرگومان‌ها
field-attempts = تلاش‌ها
field-operation = عملیات
field-purpose = هدف
field-receipt = رسید
field-release = نسخه
field-tenant = سازمان
field-tool = ابزار
filter-any = همه
filter-locale = زبان
filter-min-attempts = کمینهٔ تلاش‌ها
filter-more = بیشتر
filter-no = خیر
filter-operation = عملیات
filter-paused = متوقف‌شده
filter-release = نسخه
filter-remove = حذف این پالایه
filter-search = جست‌وجو
filter-since = از
filter-tool = ابزار
filter-until = تا
filter-yes = بله
intent-attempts = تلاش‌ها
intent-close-view = بستن
intent-receipts = رسیدها
intent-transitions = تغییرهای وضعیت
range-15m = ۱۵ دقیقهٔ گذشته
range-1h = یک ساعت گذشته
range-24h = ۲۴ ساعت گذشته
range-7d = ۷ روز گذشته
range-all = همهٔ زمان‌ها
state-unknown = برای این کنسول ناشناخته
table-column-locale = زبان
table-from-cache = از حافظهٔ محلی
table-showing = نمایش
topbar-status-connecting = در حال اتصال
topbar-status-offline = بدون اتصال
topbar-status-since = از
views-menu = نماهای ذخیره‌شده
views-saved-name = نما

## Dashboard
dashboard-slice = تفکیک بر اساس
dashboard-slice-none = بدون تفکیک (همه با هم)
dashboard-threshold-p99 = هشدار وقتی صدک ۹۹ تکثیر بیشتر است از
dashboard-threshold-oldest = یا قدیمی‌ترین نامعلوم قدیمی‌تر است از (دقیقه)
dashboard-threshold = آستانه
dashboard-budget = بودجه ({ $budget })
dashboard-chart-histogram = تعداد تلاش برای هر درخواست
dashboard-chart-amplification = تکثیر درخواست‌های ثبت‌شده در طول زمان (میانگین، صدک ۹۹)
dashboard-chart-indeterminate = درخواست‌های نامعلوم در طول زمان
dashboard-chart-age = سن نامعلوم‌ها (قدیمی‌ترین، صدک ۹۵، میانه)
dashboard-chart-board = قدیمی‌ترین درخواست‌های نامعلوم
dashboard-chart-attempts = تلاش‌های آغازشده
dashboard-chart-goodput = بازده مفید: درخواست‌های قطعی‌شده در هر دقیقه
dashboard-chart-goodput-attempt = بازده مفید به ازای هر تلاش
dashboard-chart-late = نتیجه‌های دیررس
dashboard-chart-duplicates = اثرهای تکراری
dashboard-chart-divergence = واگرایی پس از جابه‌جایی ارائه‌دهنده
dashboard-axis-intents = درخواست‌ها
dashboard-axis-attempts-per-intent = تلاش برای هر درخواست
dashboard-axis-age = سن (ساعت:دقیقه)
dashboard-axis-attempts = تلاش‌ها
dashboard-axis-per-minute = در دقیقه
dashboard-axis-ratio = سهم
dashboard-axis-effects = اثرها
dashboard-click-histogram = برای فهرست درخواست‌هایی که دست‌کم این تعداد تلاش داشته‌اند کلیک کنید
dashboard-click-created = برای فهرست درخواست‌های ثبت‌شده در این بازه کلیک کنید
dashboard-click-indeterminate = برای فهرست درخواست‌هایی که اکنون نامعلوم‌اند، از قدیمی‌ترین، کلیک کنید
dashboard-click-committed = برای فهرست درخواست‌های قطعی‌شده‌ای که در این بازه ثبت شده‌اند کلیک کنید
dashboard-series-mean = میانگین
dashboard-series-p99 = صدک ۹۹
dashboard-series-oldest = قدیمی‌ترین
dashboard-series-p95 = صدک ۹۵
dashboard-series-p50 = میانه
dashboard-series-all = همه
dashboard-tile-intents = درخواست‌ها
dashboard-tile-attempts = تلاش‌ها
dashboard-tile-amplification = تکثیر میانگین / صدک ۹۹
dashboard-tile-indeterminate = نامعلوم در این لحظه
dashboard-tile-age = سن قدیمی‌ترین / صدک ۹۵ / میانه
dashboard-tile-committed = قطعی‌شده
dashboard-tile-duplicates = اثرهای تکراری
dashboard-tile-late = نتیجه‌های دیررس
dashboard-tile-divergence = واگرایی پس از جابه‌جایی
dashboard-board-age = مدت نامعلوم‌ماندن
dashboard-loading = در حال بارگذاری...
dashboard-empty = در این بازه داده‌ای نیست
dashboard-note-indeterminate = نمودار نامعلوم‌ها، درخواست‌هایی را می‌شمارد که در پایان هر بازه نامعلوم بوده‌اند، بر پایهٔ تغییر وضعیت‌های ثبت‌شده؛ سن‌ها هم در همان لحظه‌ها سنجیده می‌شوند.
dashboard-note-cohort = تکثیر و واگرایی دربارهٔ درخواست‌هایی است که در هر بازه ثبت شده‌اند؛ تلاش‌ها، بازده مفید، نتیجه‌های دیررس و اثرهای تکراری در زمان رخ‌دادن شمرده می‌شوند.
dashboard-note-provider = در تفکیک بر اساس ارائه‌دهنده، هر درخواست زیر همهٔ ارائه‌دهندگانی که تلاش‌هایش به کار برده‌اند شمرده می‌شود.
dashboard-note-time = زمان‌ها به وقت محلی این رایانه است.
dashboard-badge-p99 = صدک ۹۹ تکثیر { $value } > { $limit }
dashboard-badge-oldest = قدیمی‌ترین نامعلوم { $age } > { $limit } دقیقه
dashboard-badge-hint = از یکی از آستانه‌های داشبورد گذشته است؛ برای باز کردن داشبورد کلیک کنید.
timeline-fit-activity = نمایش رویدادها
timeline-fit-span = از ایجاد تا پایان مهلت
timeline-legend = راهنمای نشانه‌ها و کلیدها
